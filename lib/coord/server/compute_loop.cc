#include "coord/server/compute_loop.h"

#include <vector>

namespace gpushare::coord {

void ComputeLoop::tick(Registry& registry, std::uint64_t now_ns) {
  struct Member {
    Process* job;  // one process of a job: each is throttled through its own pages
    int device;    // index in the process's devices
  };
  std::map<std::string, std::vector<Member>> by_device;
  registry.for_each_process([&](Process& job) {
    for (std::size_t i = 0; i < job.devices.size(); ++i) {
      by_device[job.devices[i].uuid].push_back({&job, static_cast<int>(i)});
    }
  });
  // Controllers of devices no job uses any more are dropped: a device
  // coming back starts afresh.
  for (auto it = devices_.begin(); it != devices_.end();) {
    it = by_device.count(it->first) ? std::next(it) : devices_.erase(it);
  }
  for (auto& [uuid, members] : by_device) {
    std::unique_ptr<DeviceController>& controller = devices_[uuid];
    if (!controller) controller = make_device_controller(policy_);
    std::vector<ComputeJobInput> inputs;
    std::vector<Member> live;
    for (const Member& m : members) {
      const TelemetryPage& t = m.job->block->telemetry();
      std::uint64_t heartbeat = t.heartbeat_ns.load(std::memory_order_acquire);
      bool fresh = heartbeat + kComputeStaleNs >= now_ns && !m.job->block->paused();
      ComputeJobInput in;
      in.id = m.job->key;
      in.qos = m.job->block->qos();
      in.launches = t.launches.load(std::memory_order_relaxed);
      in.iterations = t.iterations.load(std::memory_order_relaxed);
      in.last_iteration_ns = t.last_iteration_ns.load(std::memory_order_relaxed);
      in.gpu_busy_ns = t.gpu_busy_ns.load(std::memory_order_relaxed);
      in.compute_cap_ppm = m.job->compute_cap_ppm;
      if (fresh) {
        inputs.push_back(in);
        live.push_back(m);
      } else {
        // Not driven by the loop while stale or paused; its cap holds.
        ComputeLimits limits = m.job->block->compute(m.device);
        limits.compute_cap_ppm = m.job->compute_cap_ppm;
        m.job->block->set_compute(m.device, limits);
      }
    }
    std::vector<ComputeJobOutput> outputs = controller->tick(now_ns, inputs);
    ComputeDeviceStatus status = controller->status();
    for (std::size_t i = 0; i < live.size() && i < outputs.size(); ++i) {
      live[i].job->block->set_compute(live[i].device, outputs[i].limits);
      if (live[i].device == 0) {
        live[i].job->compute = outputs[i];
        live[i].job->compute_phase = status.phase;
      }
    }
  }
}

}  // namespace gpushare::coord
