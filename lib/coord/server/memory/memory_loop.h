// The memory loop: every memory tick (25 ms by default), per GPU, from
// the jobs' telemetry to the opportunistic jobs' device-resident targets.
// It reads what each job says it holds (device memory, managed memory on
// the device and on the host, a production allocation waiting for room),
// runs the arbiter
// (memory_arbiter.h) and writes each opportunistic job's target into its
// limits page, where the job's client thread finds it.
//
// A device's capacity is the smallest mem_total_bytes the jobs on it
// reported: the values are the jobs' own claims, and the smallest errs
// toward production (a lying job can make opportunistic jobs spill more,
// which costs them speed, never data).
//
// Between ticks it runs as soon as a job asks for room or a job's process
// goes (server.cc). `wake` is called with the process key of every
// opportunistic job whose target changed, so that the server tells it at
// once (control_block.h, "Wake-ups").
#pragma once

#include <cstdint>
#include <functional>

#include "coord/server/registry/registry.h"

namespace gpushare::coord::server {

void memory_tick(Registry& registry,
                 const std::function<void(std::uint64_t process_key)>& wake = {});

}  // namespace gpushare::coord::server
