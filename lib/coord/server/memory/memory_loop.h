// The memory loop: every compute tick, per GPU, from the jobs' telemetry to
// the opportunistic jobs' device-resident targets. It reads what
// each job says it holds (device memory, managed memory on the device and on
// the host, a production allocation waiting for room), runs the arbiter
// (memory_arbiter.h) and writes each opportunistic job's target into its
// limits page, where the job's client thread finds it.
//
// A device's capacity is the smallest mem_total_bytes the jobs on it
// reported: the values are the jobs' own claims, and the smallest errs
// toward production (a lying job can make opportunistic jobs spill more,
// which costs them speed, never data).
#pragma once

#include "coord/server/registry/registry.h"

namespace gpushare::coord::server {

void memory_tick(Registry& registry);

}  // namespace gpushare::coord::server
