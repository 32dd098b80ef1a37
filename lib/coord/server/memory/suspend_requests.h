// The coordinator's side of suspend and resume.
//
// The coordinator only asks and reports; the job's interposer moves the
// memory (lib/interpose/memory/suspend.h). `suspend` checks what the job says it
// holds that cannot move (its telemetry's suspend_blockers) and refuses
// with the reason, changing nothing; otherwise it pauses the job's
// launches and sets the limits page's suspend_request. `resume` of a
// suspended job clears the request and marks the job resuming; the tick
// lets its launches go once the job reports it is back. A request the job
// itself refused (memory allocated between the check and the request) is
// withdrawn by the tick, the job unpaused once every process is back, and
// the reason kept for `show`. A job of several processes (a process tree)
// is asked as one: see suspend.cc.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "coord/contract/protocol.h"
#include "coord/server/registry/registry.h"

namespace gpushare::coord::server {

/// What a kBlocks* mask names, in words ("CUDA arrays, ...").
std::string describe_blockers(std::uint64_t mask);

/// One coordinator tick (Registry::suspend_tick): lets resumed jobs run, withdraws refused requests;
/// `note` receives a line for each.
void suspend_tick(Registry& registry, const std::function<void(const std::string&)>& note);

}  // namespace gpushare::coord::server
