// Grouping jobs by device for the memory arbiter (memory_loop.h).
#include "coord/server/memory/memory_loop.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "coord/server/memory/memory_arbiter.h"

namespace gpushare::coord::server {

namespace {

struct Slot {  // one process of a job on one device
  Process* job;
  int index;  // the device's index in the job's registration
};

struct DeviceJobs {
  std::uint64_t capacity = kNoLimit;
  std::vector<Slot> slots;
  std::vector<ArbiterJob> inputs;
  std::vector<std::uint64_t> request_seqs;  ///< per slot: the wait its inputs belong to
};

ArbiterJob input_of(const Process& job, int index, std::uint64_t* request_seq) {
  const TelemetryPage& t = job.block->telemetry();
  // Acquire before the bytes: they are then at least as new as the wait.
  *request_seq = t.mem_request_seq[index].load(std::memory_order_acquire);
  ArbiterJob in;
  in.id = job.key;
  in.qos = job.block->qos();
  std::uint64_t used = t.devices[index].mem_used_bytes.load(std::memory_order_relaxed);
  // Plain memory a suspend moved to the host holds no device
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
    // request names only what is not (a new context's expected size). Its
    // own managed memory on the host (suspended, prefetched there, evicted)
    // holds no device memory.
    std::uint64_t host = t.host_resident_bytes[index].load(std::memory_order_relaxed);
    used = used > host ? used - host : 0;
    in.held_bytes = used;
    in.request_bytes = t.mem_request_bytes[index].load(std::memory_order_relaxed);
    in.waiting_bytes = t.devices[index].mem_waiting_bytes.load(std::memory_order_relaxed);
  }
  return in;
}

// No spill can make the production requests fit: the waits the arbiter
// chose (the fewest that let the others fit, largest first) are told so,
// and fail their allocations now rather than after their wait
// (control_block.h, "No room coming"); the others keep waiting for the
// spill. The sequence numbers were read before the bytes the arbiter
// judged (input_of).
void refuse_waiting_production(const DeviceJobs& d, const std::vector<std::size_t>& refused) {
  for (std::size_t i : refused) {
    const Slot& slot = d.slots[i];
    if (slot.job->block->qos() == kQosOpportunistic || d.request_seqs[i] == 0) continue;
    slot.job->block->refuse_room(slot.index, d.request_seqs[i]);
  }
}

}  // namespace

void memory_tick(Registry& registry, const std::function<void(std::uint64_t)>& wake) {
  std::map<std::string, DeviceJobs> devices;
  registry.for_each_process([&](Process& job) {
    if (!job.block) return;
    // A job checkpointed by the driver (checkpoint_jobs.cc) holds nothing
    // on any GPU, whatever its own counters say.
    const Job* owner = registry.find(job.job_id);
    if (owner != nullptr && owner->checkpointed) return;
    int count = std::min<int>(job.block->device_count(), static_cast<int>(job.devices.size()));
    for (int index = 0; index < count && index < kMaxDevices; ++index) {
      DeviceJobs& d = devices[job.devices[index].uuid];
      d.capacity = std::min(d.capacity, job.devices[index].mem_total_bytes);
      d.slots.push_back(Slot{&job, index});
      std::uint64_t request_seq = 0;
      d.inputs.push_back(input_of(job, index, &request_seq));
      d.request_seqs.push_back(request_seq);
    }
  });
  for (auto& [uuid, d] : devices) {
    ArbiterResult result = arbitrate(d.capacity, d.inputs);
    if (!result.fits) refuse_waiting_production(d, result.refused);
    std::size_t next = 0;
    for (const Slot& slot : d.slots) {
      if (slot.job->block->qos() != kQosOpportunistic) continue;
      if (next >= result.targets.size()) break;
      bool changed = slot.job->block->set_device_resident_target(
          slot.index, result.targets[next++].device_resident_target);
      if (changed && wake) wake(slot.job->key);
    }
  }
}

}  // namespace gpushare::coord::server
