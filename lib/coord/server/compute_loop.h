// The compute loop's I/O half: every kComputeTickNs the server reads each
// job's telemetry page, hands each device's jobs to that device's
// controller (compute_control.h), and writes the limits it returns into
// the jobs' limits pages. Runs on the server's event loop (a timerfd), so
// no lock is needed: the registry is only ever touched by that thread.
//
// A job whose telemetry has not moved for kComputeStaleNs (stopped, or
// dying) is left out of its device's tick, so a job that dies mid-loop
// stops counting at once, before its socket even closes.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "coord/server/compute_control.h"
#include "coord/server/registry.h"

namespace gpushare::coord {

inline constexpr std::uint64_t kComputeStaleNs = 500'000'000;

class ComputeLoop {
 public:
  explicit ComputeLoop(ComputePolicy policy) : policy_(policy) {}
  void tick(Registry& registry, std::uint64_t now_ns);
  ComputePolicy policy() const { return policy_; }

 private:
  ComputePolicy policy_;
  std::map<std::string, std::unique_ptr<DeviceController>> devices_;  // by UUID
};

}  // namespace gpushare::coord
