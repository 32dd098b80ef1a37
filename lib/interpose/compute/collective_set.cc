#include "interpose/compute/collective_set.h"

#include <cstring>

namespace gpushare::interpose {

bool is_collective_name(const char* name) {
  if (name == nullptr) return false;
  return std::strstr(name, "ncclDevKernel_") != nullptr ||
         std::strstr(name, "ncclKernel_") != nullptr;
}

bool CollectiveSet::insert(const void* handle) {
  auto key = reinterpret_cast<std::uintptr_t>(handle);
  if (key == 0) return true;
  while (busy_.exchange(true, std::memory_order_acquire)) {
  }
  bool stored = false;
  unsigned at = slot_of(key);
  for (int probe = 0; probe < kSlots; ++probe, at = (at + 1) % kSlots) {
    std::uintptr_t held = slots_[at].load(std::memory_order_relaxed);
    if (held == key) {
      stored = true;
      break;
    }
    if (held == 0) {
      slots_[at].store(key, std::memory_order_release);
      count_.fetch_add(1, std::memory_order_release);
      stored = true;
      break;
    }
  }
  busy_.store(false, std::memory_order_release);
  return stored;
}

bool CollectiveSet::contains(const void* handle) const {
  auto key = reinterpret_cast<std::uintptr_t>(handle);
  if (key == 0) return false;
  unsigned at = slot_of(key);
  for (int probe = 0; probe < kSlots; ++probe, at = (at + 1) % kSlots) {
    std::uintptr_t held = slots_[at].load(std::memory_order_acquire);
    if (held == key) return true;
    if (held == 0) return false;
  }
  return false;
}

}  // namespace gpushare::interpose
