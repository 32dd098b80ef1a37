// Grouping jobs by device for the memory arbiter (memory_loop.h).
#include "coord/server/memory_loop.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "coord/server/memory_arbiter.h"

namespace gpushare::coord {

namespace {

struct Slot {  // one job on one device
  Job* job;
  int index;  // the device's index in the job's registration
};

struct DeviceJobs {
  std::uint64_t capacity = kNoLimit;
  std::vector<Slot> slots;
  std::vector<ArbiterJob> inputs;
};

ArbiterJob input_of(const Job& job, int index) {
  const TelemetryPage& t = job.block->telemetry();
  ArbiterJob in;
  in.id = job.id;
  in.qos = job.block->qos();
  std::uint64_t used = t.devices[index].mem_used_bytes.load(std::memory_order_relaxed);
  // Issue 11 (3): plain memory a suspend moved to the host holds no device
  // memory (its charge stays, so that resume fits the job's limit).
  std::uint64_t suspended = t.suspended_bytes[index].load(std::memory_order_relaxed);
  used = used > suspended ? used - suspended : 0;
  if (in.qos == kQosOpportunistic) {
    std::uint64_t device = t.device_resident_bytes[index].load(std::memory_order_relaxed);
    std::uint64_t host = t.host_resident_bytes[index].load(std::memory_order_relaxed);
    in.managed_bytes = device + host < device ? kNoLimit : device + host;
    in.pinned_bytes = used > in.managed_bytes ? used - in.managed_bytes : 0;
    in.mem_limit = job.block->mem_limit(index);
  } else {
    // A waiting allocation's bytes are reserved, so already in `used`; a
    // request names only what is not (a new context's expected size).
    in.held_bytes = used;
    in.request_bytes = t.mem_request_bytes[index].load(std::memory_order_relaxed);
  }
  return in;
}

}  // namespace

void memory_tick(Registry& registry) {
  std::map<std::string, DeviceJobs> devices;
  registry.for_each_job([&](Job& job) {
    if (!job.block) return;
    int count = std::min<int>(job.block->device_count(), static_cast<int>(job.devices.size()));
    for (int index = 0; index < count && index < kMaxDevices; ++index) {
      DeviceJobs& d = devices[job.devices[index].uuid];
      d.capacity = std::min(d.capacity, job.devices[index].mem_total_bytes);
      d.slots.push_back(Slot{&job, index});
      d.inputs.push_back(input_of(job, index));
    }
  });
  for (auto& [uuid, d] : devices) {
    ArbiterResult result = arbitrate(d.capacity, d.inputs);
    std::size_t next = 0;
    for (const Slot& slot : d.slots) {
      if (slot.job->block->qos() != kQosOpportunistic) continue;
      if (next >= result.targets.size()) break;
      slot.job->block->set_device_resident_target(slot.index,
                                                  result.targets[next++].device_resident_target);
    }
  }
}

}  // namespace gpushare::coord
