// Device memory in the state file: charges, managed residency, eviction.
//
// A device's used bytes are the processes' charges plus the device-resident
// bytes of every managed record on it. When a charge (cuMemAlloc and every
// other allocation) does not fit, managed bytes of any process are evicted
// to the host, as the real driver's unified-memory layer gives pages back
// when another allocation needs them: bytes preferring the host first, then
// bytes with no preference, then bytes preferring the device. A prefetch to
// the device evicts only the first two kinds, so memory advised to stay on
// the device is moved off it only by an allocation or by its owner.
// How long an eviction or a migration takes is the driver's business (the
// copy path, link.h); here residency changes at once.
#include <cstring>

#include "simgpu/state.h"

namespace gpushare::simgpu {
namespace {

std::uint64_t uncharge_saturating(std::uint64_t value, std::uint64_t bytes) {
  return value > bytes ? value - bytes : 0;
}

// Eviction order: a record's pass (0 first).
int eviction_pass(const ManagedRecord& record) {
  if ((record.flags & kManagedPreferHost) != 0) return 0;
  return (record.flags & kManagedPreferDevice) != 0 ? 2 : 1;
}

// Moves up to `need` managed bytes on `device` to the host, skipping record
// `exclude`, in passes 0..last_pass. Returns the bytes moved.
std::uint64_t evict(StateLayout* layout, int device, std::uint64_t need, int exclude,
                    int last_pass) {
  std::uint64_t freed = 0;
  std::uint32_t high = managed_bound(layout);
  for (int pass = 0; pass <= last_pass && freed < need; ++pass) {
    for (std::uint32_t i = 0; i < high && freed < need; ++i) {
      ManagedRecord& record = layout->managed[i];
      if (record.pid == 0 || record.device != device || static_cast<int>(i) == exclude) continue;
      if (eviction_pass(record) != pass) continue;
      std::uint64_t take =
          record.resident_bytes < need - freed ? record.resident_bytes : need - freed;
      record.resident_bytes -= take;
      freed += take;
    }
  }
  if (freed > 0) ++layout->devices[device].managed_generation;
  return freed;
}

// Device-resident managed bytes that passes 0..last_pass may evict.
std::uint64_t evictable(const StateLayout* layout, int device, int exclude, int last_pass) {
  std::uint64_t bytes = 0;
  for (std::uint32_t i = 0; i < managed_bound(layout); ++i) {
    const ManagedRecord& record = layout->managed[i];
    if (record.pid == 0 || record.device != device || static_cast<int>(i) == exclude) continue;
    if (eviction_pass(record) <= last_pass) bytes += record.resident_bytes;
  }
  return bytes;
}

}  // namespace

std::uint64_t device_used(const StateLayout* layout, int device) {
  std::uint64_t used = 0;
  for (int i = 0; i < kMaxProcesses; ++i) {
    if (layout->processes[i].pid != 0) used += layout->processes[i].charged_bytes[device];
  }
  for (std::uint32_t i = 0; i < managed_bound(layout); ++i) {
    const ManagedRecord& record = layout->managed[i];
    if (record.pid != 0 && record.device == device) used += record.resident_bytes;
  }
  return used;
}

std::uint64_t device_free(const StateLayout* layout, int device) {
  std::uint64_t used = device_used(layout, device);
  std::uint64_t total = layout->devices[device].memory_bytes;
  return used < total ? total - used : 0;
}

std::uint64_t process_used(const StateLayout* layout, int slot, int device) {
  const ProcessSlot& process = layout->processes[slot];
  std::uint64_t used = process.charged_bytes[device];
  for (std::uint32_t i = 0; i < managed_bound(layout); ++i) {
    const ManagedRecord& record = layout->managed[i];
    if (record.pid == process.pid && record.device == device) used += record.resident_bytes;
  }
  return used;
}

bool charge(StateLayout* layout, int slot, int device, std::uint64_t bytes,
            std::uint64_t* evicted) {
  if (evicted != nullptr) *evicted = 0;
  std::uint64_t total = layout->devices[device].memory_bytes;
  std::uint64_t used = device_used(layout, device);
  if (bytes > total) return false;
  if (used + bytes > total) {
    std::uint64_t need = used + bytes - total;
    // Evict only when it makes the allocation fit: a refusal moves nothing.
    if (layout->header.evict == 0 || evictable(layout, device, -1, 2) < need) return false;
    std::uint64_t freed = evict(layout, device, need, -1, 2);
    if (evicted != nullptr) *evicted = freed;
  }
  layout->processes[slot].charged_bytes[device] += bytes;
  return true;
}

void uncharge(StateLayout* layout, int slot, int device, std::uint64_t bytes) {
  std::uint64_t& charged = layout->processes[slot].charged_bytes[device];
  charged = uncharge_saturating(charged, bytes);
}

int managed_add(StateLayout* layout, int slot, int device, std::uint64_t id,
                std::uint64_t size_bytes, std::uint32_t flags, std::uint32_t context,
                bool on_device) {
  for (int i = 0; i < kMaxManaged; ++i) {
    ManagedRecord& record = layout->managed[i];
    if (record.pid != 0) continue;
    std::uint64_t room = device_free(layout, device);
    record.device = device;
    record.id = id;
    record.size_bytes = size_bytes;
    record.resident_bytes = on_device ? (size_bytes < room ? size_bytes : room) : 0;
    record.flags = flags;
    record.context = context;
    record.pid = layout->processes[slot].pid;
    if (static_cast<std::uint32_t>(i) >= layout->header.managed_high_water) {
      layout->header.managed_high_water = static_cast<std::uint32_t>(i) + 1;
    }
    ++layout->devices[device].managed_generation;
    return i;
  }
  return -1;
}

ManagedRecord* managed_find(StateLayout* layout, int index, std::int32_t pid, std::uint64_t id) {
  if (index < 0 || index >= kMaxManaged) return nullptr;
  ManagedRecord& record = layout->managed[index];
  return record.pid == pid && record.id == id ? &record : nullptr;
}

void managed_remove(StateLayout* layout, int index) {
  ManagedRecord& record = layout->managed[index];
  if (record.pid == 0) return;
  ++layout->devices[managed_device_index(record)].managed_generation;
  std::memset(&record, 0, sizeof record);
  shrink_managed_high_water(layout);
}

std::uint64_t managed_migrate(StateLayout* layout, int index, std::uint64_t bytes, bool to_device,
                              std::uint64_t* evicted) {
  if (evicted != nullptr) *evicted = 0;
  ManagedRecord& record = layout->managed[index];
  record.device = managed_device_index(record);
  if (record.resident_bytes > record.size_bytes) record.resident_bytes = record.size_bytes;
  std::uint64_t moved = 0;
  if (to_device) {
    std::uint64_t host = record.size_bytes - record.resident_bytes;
    std::uint64_t want = bytes < host ? bytes : host;
    std::uint64_t room = device_free(layout, record.device);
    if (room < want) {
      std::uint64_t freed = evict(layout, record.device, want - room, index, 1);
      if (evicted != nullptr) *evicted = freed;
      room += freed;
    }
    moved = want < room ? want : room;
    record.resident_bytes += moved;
  } else {
    moved = bytes < record.resident_bytes ? bytes : record.resident_bytes;
    record.resident_bytes -= moved;
  }
  if (moved > 0) ++layout->devices[managed_device_index(record)].managed_generation;
  return moved;
}

void managed_totals(const StateLayout* layout, std::int32_t pid, int device, std::uint32_t context,
                    std::uint64_t* total_bytes, std::uint64_t* host_bytes) {
  *total_bytes = 0;
  *host_bytes = 0;
  for (std::uint32_t i = 0; i < managed_bound(layout); ++i) {
    const ManagedRecord& record = layout->managed[i];
    if (record.pid != pid || record.device != device || record.context != context) continue;
    *total_bytes += record.size_bytes;
    *host_bytes += record.size_bytes - record.resident_bytes;
  }
}

}  // namespace gpushare::simgpu
