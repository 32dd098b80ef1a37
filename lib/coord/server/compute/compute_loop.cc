#include "coord/server/compute/compute_loop.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <set>
#include <vector>

namespace gpushare::coord::server {

// Every production job's mark, once per tick; forgets jobs that left.
void ComputeLoop::sample_yield(Registry& registry, std::uint64_t now_ns) {
  const ComputeTuning tuning;
  std::set<std::uint64_t> registered;
  std::vector<YieldProducer> producers;
  std::map<std::uint64_t, Activity> activity;
  producers_.clear();
  jobs_.clear();
  registry.for_each_process([&](Process& job) {
    registered.insert(job.key);
    jobs_[job.key] = &job;
    ControlBlock& block = *job.block;
    const TelemetryPage& t = block.telemetry();
    job.hold.add(hold_sample(t, now_ns));
    Activity& a = activity[job.key];
    if (auto old = activity_.find(job.key); old != activity_.end()) a = old->second;
    std::uint64_t launches = t.launches.load(std::memory_order_relaxed);
    if (a.moved_ns == 0 || launches != a.launches) a = {launches, now_ns};
    if (block.qos() != kQosProduction) return;
    YieldProducer p;
    p.id = job.key;
    p.sealed = block.yield_sealed();
    bool fresh = t.heartbeat_ns.load(std::memory_order_acquire) + kComputeStaleNs >= now_ns;
    p.live = fresh && !block.paused();
    p.active = p.live && now_ns - a.moved_ns < tuning.idle_after_ns;
    p.busy = block.yield_busy();
    p.marks = block.yield_marks();
    p.beats = block.yield_beats();
    producers.push_back(p);
    producers_[job.key] = p;
  });
  activity_ = std::move(activity);
  yield_.sample(now_ns, producers, registered);
}

// One device's yield masks: pages sent where needed, masks written. The
// opportunistic jobs do not follow `unfollowed` (a rank that waits for the
// others, whose wait they use: tick; 0: none).
void ComputeLoop::plan_yield(bool controlled, const std::vector<std::pair<Process*, int>>& members,
                             const std::vector<bool>& live, std::uint64_t unfollowed) {
  std::vector<YieldProducer> on_device;
  for (const auto& [job, device] : members) {
    if (job->key == unfollowed) continue;
    if (auto p = producers_.find(job->key); p != producers_.end()) on_device.push_back(p->second);
  }
  // Each opportunistic job's part of a gap (control_block.h, "Shares of
  // a gap"): equal parts among the live ones, as the loop's level is split.
  std::set<std::uint64_t> followers;
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (live[i] && members[i].first->block->qos() == kQosOpportunistic) {
      followers.insert(members[i].first->key);
    }
  }
  // And each its turns at the gaps (control_block.h, "Turns"): its index
  // among them, in the order of their keys.
  std::uint64_t share_ppm = followers.size() > 1 ? 1'000'000 / followers.size() : kNoLimit;
  auto turns = static_cast<std::uint32_t>(followers.size());
  for (std::size_t i = 0; i < members.size(); ++i) {
    auto [job, device] = members[i];
    if (job->block->qos() == kQosOpportunistic) {
      job->block->set_yield_share(device, share_ppm);
      auto at = followers.find(job->key);
      if (at == followers.end()) {
        job->block->set_yield_turn(device, 0, 0);
      } else {
        auto index = static_cast<std::uint32_t>(std::distance(followers.begin(), at));
        job->block->set_yield_turn(device, index, turns);
      }
    }
    std::uint64_t mask = 0;
    if (live[i] && job->block->qos() == kQosOpportunistic) {
      std::vector<YieldDelivery> to_send;
      mask = yield_.mask(job->key, controlled, on_device, &to_send);
      for (const YieldDelivery& d : to_send) {
        auto producer = jobs_.find(d.producer);
        if (producer == jobs_.end() || !yield_sender_) continue;
        if (yield_sender_(d.receiver, d.slot, producer->second->block->yield_fd())) {
          yield_.delivered(d);
        }
      }
    }
    job->block->set_yield_mask(device, mask);
  }
}

// The control groups of this tick (gang.h): each process's GPUs and those
// it holds memory on (a rank's own), as the registry has them.
std::map<std::string, std::string> ComputeLoop::gang_groups(Registry& registry) {
  std::vector<GangProcess> processes;
  registry.for_each_process([&](Process& job) {
    GangProcess p;
    p.key = job.key;
    p.job_id = job.job_id;
    p.production = job.block->qos() == kQosProduction;
    const TelemetryPage& t = job.block->telemetry();
    for (std::size_t i = 0; i < job.devices.size(); ++i) {
      p.registered.push_back(job.devices[i].uuid);
      if (i < kMaxDevices && t.devices[i].mem_used_bytes.load(std::memory_order_relaxed) != 0) {
        p.used.push_back(job.devices[i].uuid);
      }
    }
    processes.push_back(std::move(p));
  });
  gangs_ = find_gangs(processes);  // for measure_gangs under every policy
  if (policy_ != ComputePolicy::kGpushare) return {};
  return control_groups(processes, gangs_);
}

// Each rank's collectives (gang.h): its spans over the last window, summed
// over the GPUs it uses, and which rank the others wait for. Under every
// policy (ls and show say it); waiting_ only under gpushare's.
void ComputeLoop::measure_gangs(Registry& registry, std::uint64_t now_ns) {
  std::map<std::uint64_t, SpanMeter> spans;
  std::map<std::uint64_t, double> harvests;
  waiting_.clear();
  registry.for_each_process([&](Process& job) {
    job.collective_ms = job.collective_wait_ms = -1;
    job.waited_for = false;
  });
  for (const Gang& gang : gangs_) {
    std::vector<RankSpan> ranks;
    std::vector<Process*> processes;
    for (std::uint64_t key : gang.ranks) {
      auto at = jobs_.find(key);
      if (at == jobs_.end()) continue;
      Process* rank = at->second;
      const TelemetryPage& t = rank->block->telemetry();
      std::uint64_t ns = 0, count = 0;
      for (std::size_t i = 0; i < kMaxDevices; ++i) {
        ns += t.collective_ns[i].load(std::memory_order_relaxed);
        count += t.collectives[i].load(std::memory_order_relaxed);
      }
      SpanMeter& meter = spans[key];
      if (auto old = spans_.find(key); old != spans_.end()) meter = old->second;
      meter.sample(now_ns, ns, count);
      ranks.push_back(meter.span());
      processes.push_back(rank);
    }
    GangWait wait = gang_wait(ranks);
    std::vector<std::optional<double>> harvest(processes.size());
    bool any_harvest = false;
    for (std::size_t i = 0; i < processes.size(); ++i) {
      std::optional<double> was;
      if (auto h = harvests_.find(processes[i]->key); h != harvests_.end()) was = h->second;
      harvest[i] = harvest_wait(was, wait, i);
      if (harvest[i]) harvests[processes[i]->key] = *harvest[i];
      any_harvest = any_harvest || harvest[i].has_value();
    }
    // While a rank's wait is used it may look too short to count; the
    // rank with the least time is still the one the others wait for.
    int waited_for = wait.waited_for >= 0 ? wait.waited_for : (any_harvest ? wait.least : -1);
    for (std::size_t i = 0; i < processes.size(); ++i) {
      Process& rank = *processes[i];
      rank.collective_ms = ranks[i].span_ms;
      rank.collective_wait_ms = wait.wait_ms[i];
      rank.waited_for = waited_for == static_cast<int>(i);
      if (!harvest[i] || policy_ != ComputePolicy::kGpushare || !gang_harvest_ ||
          processes.size() > kHarvestMaxRanks) {
        continue;
      }
      // Its GPU: the one it holds memory on (a rank uses one).
      const TelemetryPage& t = rank.block->telemetry();
      std::vector<std::string> used;
      for (std::size_t d = 0; d < rank.devices.size() && d < kMaxDevices; ++d) {
        if (t.devices[d].mem_used_bytes.load(std::memory_order_relaxed) != 0) {
          used.push_back(rank.devices[d].uuid);
        }
      }
      if (used.size() == 1) waiting_[used[0]] = {rank.key, *harvest[i]};
    }
  }
  spans_ = std::move(spans);
  harvests_ = std::move(harvests);
}

void ComputeLoop::tick(Registry& registry, std::uint64_t now_ns) {
  sample_yield(registry, now_ns);
  struct Member {
    Process* job;  // one process of a job: each is throttled through its own pages
    int device;    // index in the process's devices
  };
  std::map<std::string, std::vector<Member>> by_device;
  registry.for_each_process([&](Process& job) {
    for (std::size_t i = 0; i < job.devices.size(); ++i) {
      if (!counts_on(job, i)) continue;  // only on the GPUs it uses (registry.h)
      by_device[job.devices[i].uuid].push_back({&job, static_cast<int>(i)});
    }
  });
  // One controller per control group: a GPU alone, or the GPUs of a
  // production job on several GPUs together (gang.h). TGS stays one per
  // GPU, as published.
  std::map<std::string, std::string> group_of = gang_groups(registry);
  measure_gangs(registry, now_ns);
  std::map<std::string, std::vector<Member>> by_group;
  std::map<std::string, std::vector<std::string>> group_gpus;
  for (const auto& [uuid, members] : by_device) {
    auto g = group_of.find(uuid);
    const std::string& key = g != group_of.end() ? g->second : uuid;
    group_gpus[key].push_back(uuid);
    for (const Member& m : members) by_group[key].push_back(m);
  }
  // Controllers of groups no job uses any more are dropped: a device
  // coming back starts afresh.
  for (auto it = devices_.begin(); it != devices_.end();) {
    it = by_group.count(it->first) ? std::next(it) : devices_.erase(it);
  }
  for (auto& [key, members] : by_group) {
    std::unique_ptr<DeviceController>& controller = devices_[key];
    if (!controller) controller = make_device_controller(policy_);
    const std::vector<std::string>& gpus = group_gpus[key];
    std::vector<ComputeJobInput> inputs;
    std::vector<Process*> live;
    std::map<Process*, bool> seen;  // a process on several GPUs of the group: one input
    for (const Member& m : members) {
      if (seen.count(m.job)) continue;
      const TelemetryPage& t = m.job->block->telemetry();
      std::uint64_t heartbeat = t.heartbeat_ns.load(std::memory_order_acquire);
      bool fresh = heartbeat + kComputeStaleNs >= now_ns && !m.job->block->paused();
      seen[m.job] = fresh;
      ComputeJobInput in;
      in.id = m.job->key;
      in.qos = m.job->block->qos();
      in.launches = t.launches.load(std::memory_order_relaxed);
      in.iterations = t.iterations.load(std::memory_order_relaxed);
      in.last_iteration_ns = t.last_iteration_ns.load(std::memory_order_relaxed);
      in.gpu_busy_ns = t.gpu_busy_ns.load(std::memory_order_relaxed);
      in.compute_cap_ppm = m.job->compute_cap_ppm;
      // A deep queue waits in its synchronisation longer than idle_after
      // with nothing to launch: its live mark says it is not idle.
      in.in_flight = in.qos == kQosProduction && yield_.in_flight(in.id);
      // The level is split among the opportunistic jobs of one GPU: the
      // one it holds memory on (a job that sees every GPU uses one).
      std::string own = m.job->devices[m.device].uuid;
      for (std::size_t i = 0; i < m.job->devices.size() && i < kMaxDevices; ++i) {
        if (t.devices[i].mem_used_bytes.load(std::memory_order_relaxed) != 0 &&
            std::find(gpus.begin(), gpus.end(), m.job->devices[i].uuid) != gpus.end()) {
          own = m.job->devices[i].uuid;
          break;
        }
      }
      in.share_group = static_cast<int>(std::find(gpus.begin(), gpus.end(), own) - gpus.begin());
      if (fresh) {
        inputs.push_back(in);
        live.push_back(m.job);
      }
    }
    std::vector<ComputeJobOutput> outputs = controller->tick(now_ns, inputs);
    ComputeDeviceStatus status = controller->status();
    std::map<Process*, const ComputeJobOutput*> decided;
    for (std::size_t i = 0; i < live.size() && i < outputs.size(); ++i) {
      decided[live[i]] = &outputs[i];
    }
    // Beside a rank that waits for the others (measure_gangs), the
    // opportunistic jobs may use part of its wait: they follow none of
    // its marks, so their kernels may run beside the rank's own, under a
    // GPU-time cap of its gaps and kWaitHarvest of its wait (gang.h,
    // wait_harvest_ppm) split among them, the wait's part never above the
    // level's own cap: a gang that slows has the level cut, and this with
    // it. Only on a GPU where that rank is the only production process,
    // outside profiling and a held level. The rank the others wait for,
    // and every rank while nothing is measured, are protected as before:
    // their marks are followed.
    std::map<std::string, std::uint64_t> unfollowed;  // GPU -> the waiting rank
    std::map<std::string, std::uint64_t> beside;      // GPU -> its live opportunistic jobs
    std::map<std::string, double> gaps;               // GPU -> the rank's idle share
    for (const std::string& uuid : gpus) {
      auto w = waiting_.find(uuid);
      if (w == waiting_.end() || status.phase == "free" || status.phase == "profile") continue;
      int production = 0;
      std::uint64_t opportunistic = 0;
      bool rank_here = false;
      for (const Member& m : by_device[uuid]) {
        if (m.job->block->qos() == kQosProduction) {
          ++production;
          rank_here = rank_here || m.job->key == w->second.rank;
        } else if (seen[m.job]) {
          ++opportunistic;
        }
      }
      if (production != 1 || !rank_here || opportunistic == 0) continue;
      unfollowed[uuid] = w->second.rank;
      beside[uuid] = opportunistic;
      auto rank = jobs_.find(w->second.rank);
      gaps[uuid] = rank != jobs_.end() ? rank->second->block->yield_gap_share() : 0;
    }
    std::set<std::string> candidates;  // GPUs whose jobs may take the wait's cap
    std::map<std::string, double> speed;  // GPU -> its opportunistic jobs' summed speed
    for (const Member& m : members) {
      auto d = decided.find(m.job);
      if (d == decided.end()) continue;
      const std::string& uuid = m.job->devices[m.device].uuid;
      if (unfollowed.count(uuid) == 0 || m.job->block->qos() != kQosOpportunistic) continue;
      if (d->second->limits.launch_budget == kNoLimit) candidates.insert(uuid);
      double& sum = speed.emplace(uuid, 0).first->second;
      if (sum >= 0) sum = d->second->speed_per_s >= 0 ? sum + d->second->speed_per_s : -1;
    }
    // Each use of a wait is a trial (gang.h, harvest_trial): kept only
    // where it pays, and ended when the group's production slows by twice
    // the loop's target (its slowest, as the controller measured it; once
    // the target, a single noisy measurement, ended most uses).
    bool slowed = false;
    for (const Member& m : members) {
      auto d = decided.find(m.job);
      if (d == decided.end() || m.job->block->qos() != kQosProduction) continue;
      // Its speed against its solo speed, as the controller measured both
      // (its slowdown field is not set for every rank).
      const ComputeJobOutput& o = *d->second;
      slowed = slowed || (o.speed_per_s > 0 && o.solo_speed_per_s > 0 &&
                          o.speed_per_s < (1 - 2 * ComputeTuning{}.slowdown_target) * o.solo_speed_per_s);
    }
    std::set<std::string> harvesting;
    for (const std::string& uuid : gpus) {
      auto s = speed.find(uuid);
      if (harvest_trial(&trials_[uuid], candidates.count(uuid) != 0,
                        s != speed.end() ? s->second : -1, now_ns, slowed)) {
        harvesting.insert(uuid);
      }
    }
    for (const Member& m : members) {
      auto d = decided.find(m.job);
      if (d == decided.end()) {
        // Not driven by the loop while stale or paused; its cap holds.
        ComputeLimits limits = m.job->block->compute(m.device);
        limits.compute_cap_ppm = m.job->compute_cap_ppm;
        m.job->block->set_compute(m.device, limits);
        m.job->uses_wait_of_pid = 0;
        continue;
      }
      ComputeJobOutput out = *d->second;
      const std::string& uuid = m.job->devices[m.device].uuid;
      // An opportunistic job beside the waiting rank uses its wait.
      bool uses_wait = harvesting.count(uuid) != 0 &&
                       m.job->block->qos() == kQosOpportunistic &&
                       out.limits.launch_budget == kNoLimit;
      if (uses_wait) {
        std::uint64_t cap = wait_harvest_ppm(waiting_[uuid].wait_share, gaps[uuid],
                                             out.limits.compute_cap_ppm, beside[uuid]);
        out.limits.compute_cap_ppm = std::min(cap, m.job->compute_cap_ppm);
      }
      m.job->block->set_compute(m.device, out.limits);
      if (static_cast<std::size_t>(m.device) == first_counted(*m.job)) {
        auto rank = uses_wait ? jobs_.find(unfollowed.at(uuid)) : jobs_.end();
        m.job->uses_wait_of_pid = rank != jobs_.end() ? rank->second->pid : 0;
        m.job->compute = out;
        m.job->compute_phase = status.phase;
      }
    }
    bool controlled = policy_ == ComputePolicy::kGpushare && status.phase != "free";
    for (const std::string& uuid : gpus) {
      std::vector<std::pair<Process*, int>> all;
      std::vector<bool> is_live;
      for (const Member& m : by_device[uuid]) {
        all.emplace_back(m.job, m.device);
        is_live.push_back(seen[m.job]);
      }
      auto u = unfollowed.find(uuid);
      plan_yield(controlled, all, is_live,
                 u != unfollowed.end() && harvesting.count(uuid) != 0 ? u->second : 0);
    }
  }
}

}  // namespace gpushare::coord::server
