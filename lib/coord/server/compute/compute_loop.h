// The compute loop's I/O half: every kComputeTickNs the server reads each
// job's telemetry page, hands each device's jobs to that device's
// controller (compute_control.h), and writes the limits it returns into
// the jobs' limits pages. Runs on the server's event loop (a timerfd), so
// no lock is needed: the registry is only ever touched by that thread.
//
// A job whose telemetry has not moved for kComputeStaleNs (stopped, or
// dying) is left out of its device's tick, so a job that dies mid-loop
// stops counting at once, before its socket even closes.
//
// A production job on several GPUs (gang.h): its GPUs share one
// controller, which judges the job by its step rate. The loop also
// measures each rank's time in its collectives, names the rank the others
// wait for, and (with gang_harvest) lets the opportunistic jobs beside a
// rank that waits use part of that wait (measure_gangs, tick).
//
// The yield signal (compute_yield.h): each tick the loop samples every
// production job's busy mark, sends production jobs' yield pages to the
// opportunistic jobs on their devices (through the sender the server
// gives it), and writes each opportunistic job's yield_mask.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "coord/server/compute/compute_control.h"
#include "coord/server/compute/compute_yield.h"
#include "coord/server/compute/gang.h"
#include "coord/server/registry/registry.h"

namespace gpushare::coord::server {

inline constexpr std::uint64_t kComputeStaleNs = 500'000'000;

class ComputeLoop {
 public:
  /// Sends a yield page (the descriptor) for a slot to a registered job;
  /// false when it could not be sent (it is tried again next tick).
  using YieldSender = std::function<bool(std::uint64_t job_id, int slot, int fd)>;

  /// `gang_harvest`: the opportunistic jobs beside a gang's rank that
  /// waits for the others may use its wait (tick); off, the rank
  /// the others wait for is still measured and named.
  explicit ComputeLoop(ComputePolicy policy, bool gang_harvest = false)
      : policy_(policy), gang_harvest_(gang_harvest) {}
  void tick(Registry& registry, std::uint64_t now_ns);
  ComputePolicy policy() const { return policy_; }
  void set_yield_sender(YieldSender sender) { yield_sender_ = std::move(sender); }

 private:
  struct Activity {
    std::uint64_t launches = 0;
    std::uint64_t moved_ns = 0;
  };
  void sample_yield(Registry& registry, std::uint64_t now_ns);
  std::map<std::string, std::string> gang_groups(Registry& registry);
  void plan_yield(bool controlled, const std::vector<std::pair<Process*, int>>& members,
                  const std::vector<bool>& live, std::uint64_t unfollowed);
  void measure_gangs(Registry& registry, std::uint64_t now_ns);

  ComputePolicy policy_;
  bool gang_harvest_ = false;
  YieldSender yield_sender_;
  YieldPlanner yield_;
  std::map<std::uint64_t, YieldProducer> producers_;  // this tick's, by job id
  std::map<std::uint64_t, Process*> jobs_;            // this tick's, by process key
  std::map<std::uint64_t, Activity> activity_;
  std::vector<Gang> gangs_;  // this tick's production jobs on several GPUs
  std::map<std::uint64_t, SpanMeter> spans_;  // by process key: ranks' collectives
  std::map<std::uint64_t, double> harvests_;  // ranks whose wait is used: the wait share
  std::map<std::string, HarvestTrial> trials_;  // by GPU: whether using a wait pays
  // This tick's GPUs whose one production process is a rank that waits for
  // the others: the rank's key and the part of its time it waits.
  struct Waiting {
    std::uint64_t rank = 0;
    double wait_share = 0;
  };
  std::map<std::string, Waiting> waiting_;
  // By control group: a GPU's UUID, or a gang's GPUs' (gang.h).
  std::map<std::string, std::unique_ptr<DeviceController>> devices_;
};

}  // namespace gpushare::coord::server
