// The process checkpoint's rules on the state file: which request may
// start in which state, how a restore's device pairs are checked, and how a
// process's charges leave its devices and come back on others. The protocol
// between the caller and the process, and the process's own objects, are in
// driver/checkpoint.cc.
#include <cstring>

#include "simgpu/state.h"

namespace gpushare::simgpu {
namespace {

int device_of_uuid(const StateLayout* layout, const std::uint8_t uuid[16]) {
  std::uint32_t count = layout->header.device_count;
  for (std::uint32_t i = 0; i < count && i < static_cast<std::uint32_t>(kMaxDevices); ++i) {
    if (std::memcmp(layout->devices[i].uuid, uuid, 16) == 0) return static_cast<int>(i);
  }
  return -1;
}

// The devices a process sees, clamped: the slot lives in a file that other
// processes can write.
int seen_devices(const StateLayout* layout, const ProcessSlot& slot, int devices[kMaxDevices]) {
  int count = 0;
  std::uint32_t physical = layout->header.device_count;
  for (std::uint32_t i = 0; i < slot.ordinal_count && i < static_cast<std::uint32_t>(kMaxDevices);
       ++i) {
    int device = slot.ordinal_device[i];
    if (device < 0 || static_cast<std::uint32_t>(device) >= physical) continue;
    devices[count++] = device;
  }
  return count;
}

}  // namespace

bool checkpoint_op_allowed(std::uint32_t state, std::uint32_t op) {
  switch (op) {
    case kCheckpointOpLock:
      return state == kCheckpointRunning;
    case kCheckpointOpCheckpoint:
    case kCheckpointOpUnlock:
      return state == kCheckpointLocked;
    case kCheckpointOpRestore:
      return state == kCheckpointCheckpointed;
    default:
      return false;
  }
}

int find_process_slot(const StateLayout* layout, std::int32_t pid) {
  if (pid <= 0) return -1;
  for (int i = 0; i < kMaxProcesses; ++i) {
    if (layout->processes[i].pid == pid) return i;
  }
  return -1;
}

RestorePlan plan_restore(const StateLayout* layout, int slot_index, const UuidPair* pairs,
                         int count, std::int8_t map[kMaxDevices]) {
  const ProcessSlot& slot = layout->processes[slot_index];
  int seen[kMaxDevices];
  int seen_count = seen_devices(layout, slot, seen);
  bool is_seen[kMaxDevices] = {};
  for (int i = 0; i < seen_count; ++i) is_seen[seen[i]] = true;
  for (int i = 0; i < kMaxDevices; ++i) map[i] = -1;
  if (pairs == nullptr || count == 0) {
    for (int i = 0; i < seen_count; ++i) map[seen[i]] = static_cast<std::int8_t>(seen[i]);
    return RestorePlan::kOk;
  }
  // Every device checkpointed once as the old one, each target once as
  // the new one, every target a device the process sees.
  if (count != seen_count) return RestorePlan::kInvalid;
  bool taken[kMaxDevices] = {};
  bool chip_differs = false;
  for (int i = 0; i < count; ++i) {
    int from = device_of_uuid(layout, pairs[i].old_uuid);
    int to = device_of_uuid(layout, pairs[i].new_uuid);
    if (from < 0 || to < 0 || !is_seen[from] || !is_seen[to]) return RestorePlan::kInvalid;
    if (map[from] >= 0 || taken[to]) return RestorePlan::kInvalid;
    map[from] = static_cast<std::int8_t>(to);
    taken[to] = true;
    // The simulator's chip type is its SM count: devices configured with
    // different GPUSHARE_SIM_SMS are different chips.
    if (layout->devices[from].sms != layout->devices[to].sms) chip_differs = true;
  }
  return chip_differs ? RestorePlan::kChipType : RestorePlan::kOk;
}

void checkpoint_release(StateLayout* layout, int slot_index,
                        std::uint64_t data_bytes[kMaxDevices]) {
  ProcessSlot& slot = layout->processes[slot_index];
  for (int d = 0; d < kMaxDevices; ++d) {
    std::uint64_t overhead =
        static_cast<std::uint64_t>(slot.contexts[d]) * layout->devices[d].ctx_overhead_bytes;
    if (data_bytes != nullptr) {
      data_bytes[d] = slot.charged_bytes[d] > overhead ? slot.charged_bytes[d] - overhead : 0;
    }
    slot.saved_bytes[d] += slot.charged_bytes[d];
    slot.saved_contexts[d] += slot.contexts[d];
    slot.charged_bytes[d] = 0;
    slot.contexts[d] = 0;
  }
}

bool checkpoint_reacquire(StateLayout* layout, int slot_index, const std::int8_t map[kMaxDevices]) {
  ProcessSlot& slot = layout->processes[slot_index];
  std::uint32_t physical = layout->header.device_count;
  int target[kMaxDevices];
  for (int d = 0; d < kMaxDevices; ++d) {
    int to = map[d] >= 0 && static_cast<std::uint32_t>(map[d]) < physical ? map[d] : d;
    target[d] = to;
  }
  // Charge device by device; undo on the first that does not fit.
  for (int d = 0; d < kMaxDevices; ++d) {
    if (slot.saved_bytes[d] == 0) continue;
    if (!charge(layout, slot_index, target[d], slot.saved_bytes[d])) {
      for (int u = 0; u < d; ++u) {
        if (slot.saved_bytes[u] != 0) uncharge(layout, slot_index, target[u], slot.saved_bytes[u]);
      }
      return false;
    }
  }
  for (int d = 0; d < kMaxDevices; ++d) {
    slot.contexts[target[d]] += slot.saved_contexts[d];
  }
  for (int d = 0; d < kMaxDevices; ++d) {
    slot.saved_bytes[d] = 0;
    slot.saved_contexts[d] = 0;
  }
  for (std::uint32_t i = 0; i < slot.ordinal_count && i < static_cast<std::uint32_t>(kMaxDevices);
       ++i) {
    int device = slot.ordinal_device[i];
    if (device >= 0 && device < kMaxDevices) {
      slot.ordinal_device[i] = static_cast<std::int8_t>(target[device]);
    }
  }
  return true;
}

}  // namespace gpushare::simgpu
