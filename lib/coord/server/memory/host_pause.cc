// The coordinator's own pause of an opportunistic job on host memory
// (host_pause.h).
#include "coord/server/memory/host_pause.h"

#include <set>
#include <string>

namespace gpushare::coord::server {

namespace {

// host / (device + host) >= milli / 1000, without overflow or division.
bool host_share_at_least(const HostPauseInput& in, std::uint64_t milli) {
  if (in.host_resident_bytes == 0) return false;
  // Scale down to keep the products in range (sizes up to 2^64).
  std::uint64_t device = in.device_resident_bytes >> 10, host = in.host_resident_bytes >> 10;
  if (host == 0 && device == 0) {
    device = in.device_resident_bytes;
    host = in.host_resident_bytes;
  }
  unsigned __int128 total = static_cast<unsigned __int128>(device) + host;
  return static_cast<unsigned __int128>(host) * 1000 >= total * milli;
}

}  // namespace

bool host_pause_decide(const HostPauseInput& input, bool paused_now) {
  if (!input.production_active) return false;
  if (paused_now) return host_share_at_least(input, kResumeHostShareMilli);
  return host_share_at_least(input, kPauseHostShareMilli);
}

void HostPauser::tick(Registry& registry, std::uint64_t now_ns) {
  // Production activity per device, from the launch counts.
  std::set<std::string> active_devices;
  std::map<std::uint64_t, Activity> seen;
  registry.for_each_process([&](Process& process) {
    // A paused production job launches nothing more, whatever it left
    // unsynchronised: it does not hold opportunistic jobs back.
    if (!process.block || process.block->qos() == kQosOpportunistic || process.block->paused()) {
      return;
    }
    const TelemetryPage& t = process.block->telemetry();
    std::uint64_t launches = t.launches.load(std::memory_order_relaxed);
    bool in_flight = t.kernels_completed.load(std::memory_order_relaxed) != launches;
    Activity a = activity_.count(process.key) ? activity_[process.key] : Activity{launches, 0};
    if (launches != a.launches || in_flight) a = Activity{launches, now_ns};
    seen[process.key] = a;
    if (a.active_ns == 0 || now_ns - a.active_ns >= kProductionQuietNs) return;
    // Only the GPUs it uses (registry.h, counts_on): an opportunistic job
    // moved off its GPU (migrate.h) is not paused beside it on the other.
    for (std::size_t i = 0; i < process.devices.size(); ++i) {
      if (counts_on(process, i)) active_devices.insert(process.devices[i].uuid);
    }
  });
  activity_ = std::move(seen);  // forgets processes that left

  std::vector<std::pair<std::uint64_t, bool>> changes;
  registry.for_each_job([&](const Job& job) {
    bool pause = false;
    if (enabled_ && job.qos == kQosOpportunistic) {
      HostPauseInput in;
      for (std::uint64_t key : job.processes) {
        const Process* process = registry.process(key);
        if (process == nullptr || !process->block) continue;
        const TelemetryPage& t = process->block->telemetry();
        int count = static_cast<int>(process->devices.size());
        for (int i = 0; i < count && i < kMaxDevices; ++i) {
          if (active_devices.count(process->devices[i].uuid) == 0) continue;
          in.production_active = true;
          std::uint64_t device = t.device_resident_bytes[i].load(std::memory_order_relaxed);
          std::uint64_t host = t.host_resident_bytes[i].load(std::memory_order_relaxed);
          // Saturating: the values are the job's own claims.
          in.device_resident_bytes = in.device_resident_bytes + device < device
                                         ? kNoLimit
                                         : in.device_resident_bytes + device;
          in.host_resident_bytes =
              in.host_resident_bytes + host < host ? kNoLimit : in.host_resident_bytes + host;
        }
      }
      pause = host_pause_decide(in, job.host_paused);
    }
    if (pause != job.host_paused) changes.emplace_back(job.id, pause);
  });
  for (const auto& [id, pause] : changes) registry.set_host_paused(id, pause);
}

}  // namespace gpushare::coord::server
