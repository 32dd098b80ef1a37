#include "interpose/core/accounting.h"

#include <sys/mman.h>

#include <cstring>

namespace gpushare::interpose {

namespace {

void subtract(std::atomic<std::uint64_t>* counter, std::uint64_t bytes, std::uint64_t* after) {
  std::uint64_t held = counter->load(std::memory_order_relaxed);
  for (;;) {
    std::uint64_t next = held > bytes ? held - bytes : 0;
    if (counter->compare_exchange_weak(held, next, std::memory_order_acq_rel,
                                       std::memory_order_relaxed)) {
      if (after != nullptr) *after = next;
      return;
    }
  }
}

}  // namespace

bool DeviceBudget::reserve_on(std::atomic<std::uint64_t>* counter, std::uint64_t bytes,
                              std::uint64_t limit) {
  std::uint64_t held = counter->load(std::memory_order_relaxed);
  for (;;) {
    std::uint64_t wanted;
    if (__builtin_add_overflow(held, bytes, &wanted) || wanted > limit) return false;
    if (counter->compare_exchange_weak(held, wanted, std::memory_order_acq_rel,
                                       std::memory_order_relaxed)) {
      return true;
    }
  }
}

bool DeviceBudget::try_reserve(std::uint64_t bytes, std::uint64_t limit) {
  if (tree_ == nullptr) {
    if (!reserve_on(local_, bytes, limit)) return false;
    note(local_->load(std::memory_order_relaxed));
    return true;
  }
  // The tree's sum is the limit's; this process's slot follows it, so that
  // the charge can be given back if this process dies.
  if (!reserve_on(tree_, bytes, limit) &&
      (reclaim_ == nullptr || !reclaim_() || !reserve_on(tree_, bytes, limit))) {
    return false;
  }
  note(local_->fetch_add(bytes, std::memory_order_acq_rel) + bytes);
  return true;
}

void DeviceBudget::charge(std::uint64_t bytes) {
  if (tree_ != nullptr) tree_->fetch_add(bytes, std::memory_order_acq_rel);
  note(local_->fetch_add(bytes, std::memory_order_acq_rel) + bytes);
}

void DeviceBudget::release(std::uint64_t bytes) {
  // Never more than this process holds: the tree's sum must not lose
  // other processes' charges.
  std::uint64_t own = local_->load(std::memory_order_relaxed);
  if (bytes > own) bytes = own;
  std::uint64_t next = 0;
  subtract(local_, bytes, &next);
  if (tree_ != nullptr) subtract(tree_, bytes, nullptr);
  if (mirror_ != nullptr) mirror_->store(next, std::memory_order_relaxed);
}

std::uint64_t DeviceBudget::held() const {
  return (tree_ != nullptr ? tree_ : local_)->load(std::memory_order_relaxed);
}

void DeviceBudget::attach(std::atomic<std::uint64_t>* tree, std::atomic<std::uint64_t>* local,
                          bool (*reclaim)()) {
  std::uint64_t own = local_->load(std::memory_order_relaxed);
  local->store(own, std::memory_order_relaxed);
  tree->fetch_add(own, std::memory_order_acq_rel);
  local_ = local;
  reclaim_ = reclaim;
  tree_ = tree;
}

void DeviceBudget::reset() {
  local_ = &held_;
  tree_ = nullptr;
  reclaim_ = nullptr;
  held_.store(0, std::memory_order_relaxed);
  peak_.store(0, std::memory_order_relaxed);
  if (mirror_ != nullptr) mirror_->store(0, std::memory_order_relaxed);
}

void DeviceBudget::note(std::uint64_t held) {
  if (mirror_ != nullptr) mirror_->store(held, std::memory_order_relaxed);
  std::uint64_t peak = peak_.load(std::memory_order_relaxed);
  while (held > peak && !peak_.compare_exchange_weak(peak, held, std::memory_order_relaxed)) {
  }
}

MemoryView virtual_view(std::uint64_t limit, std::uint64_t physical_total,
                        std::uint64_t physical_free, std::uint64_t held) {
  MemoryView view;
  view.total = limit < physical_total ? limit : physical_total;
  // After a live decrease a job may hold more than its new limit: it is
  // told it uses all of it, never more (NVML's total = used + free +
  // reserved must hold, and tools choke on used > total).
  view.used = held < view.total ? held : view.total;
  view.free = view.total - view.used;
  // What other processes hold is not free for this job either: that part
  // of the capacity shows as reserved.
  if (view.free > physical_free) view.free = physical_free;
  view.reserved = view.total - view.used - view.free;
  return view;
}

namespace {

// Fibonacci hashing spreads pointer keys, whose low bits are often zero.
inline std::size_t hash_key(std::uint64_t key, std::size_t capacity) {
  return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> 20) & (capacity - 1);
}

class Lock {
 public:
  explicit Lock(pthread_mutex_t* mutex) : mutex_(mutex) { pthread_mutex_lock(mutex_); }
  ~Lock() { pthread_mutex_unlock(mutex_); }
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;

 private:
  pthread_mutex_t* mutex_;
};

}  // namespace

std::size_t AllocationTable::index_of(std::uint64_t key) const {
  std::size_t index = hash_key(key, capacity_);
  while (slots_[index].key != 0 && slots_[index].key != key) index = (index + 1) & (capacity_ - 1);
  return index;
}

bool AllocationTable::grow_locked() {
  std::size_t new_capacity = capacity_ == 0 ? 1024 : capacity_ * 2;
  void* memory = mmap(nullptr, new_capacity * sizeof(Slot), PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) return false;
  Slot* old_slots = slots_;
  std::size_t old_capacity = capacity_;
  slots_ = static_cast<Slot*>(memory);  // zero-filled: all empty
  capacity_ = new_capacity;
  for (std::size_t i = 0; i < old_capacity; ++i) {
    if (old_slots[i].key != 0) slots_[index_of(old_slots[i].key)] = old_slots[i];
  }
  if (old_slots != nullptr) munmap(old_slots, old_capacity * sizeof(Slot));
  return true;
}

bool AllocationTable::insert(std::uint64_t key, const AllocationRecord& record) {
  if (key == 0) return false;
  Lock lock(&mutex_);
  // Keep the load factor under 1/2 so probes stay short.
  if ((count_ + 1) * 2 > capacity_ && !grow_locked()) return false;
  std::size_t index = index_of(key);
  if (slots_[index].key == 0) ++count_;
  slots_[index] = Slot{key, record};
  return true;
}

bool AllocationTable::find(std::uint64_t key, AllocationRecord* record) {
  Lock lock(&mutex_);
  if (capacity_ == 0 || key == 0) return false;
  const Slot& slot = slots_[index_of(key)];
  if (slot.key == 0) return false;
  *record = slot.record;
  return true;
}

bool AllocationTable::set_on_host(std::uint64_t key, bool on_host, AllocationRecord* before) {
  Lock lock(&mutex_);
  if (capacity_ == 0 || key == 0) return false;
  Slot& slot = slots_[index_of(key)];
  if (slot.key == 0) return false;
  *before = slot.record;
  slot.record.on_host = on_host ? 1 : 0;
  return true;
}

bool AllocationTable::replace(std::uint64_t key, const AllocationRecord& record) {
  Lock lock(&mutex_);
  if (capacity_ == 0 || key == 0) return false;
  Slot& slot = slots_[index_of(key)];
  if (slot.key == 0) return false;
  slot.record = record;
  return true;
}

bool AllocationTable::erase(std::uint64_t key, AllocationRecord* record) {
  Lock lock(&mutex_);
  if (capacity_ == 0 || key == 0) return false;
  std::size_t index = index_of(key);
  if (slots_[index].key == 0) return false;
  *record = slots_[index].record;
  erase_index_locked(index);
  return true;
}

void AllocationTable::erase_index_locked(std::size_t hole) {
  // Backward-shift deletion: move later members of the probe run into the
  // hole when their home position allows it, so lookups never need tombstones.
  std::size_t next = hole;
  for (;;) {
    next = (next + 1) & (capacity_ - 1);
    if (slots_[next].key == 0) break;
    std::size_t home = hash_key(slots_[next].key, capacity_);
    // Is `home` cyclically outside (hole, next]? Then the entry may move.
    bool movable = hole <= next ? (home <= hole || home > next) : (home <= hole && home > next);
    if (movable) {
      slots_[hole] = slots_[next];
      hole = next;
    }
  }
  slots_[hole] = Slot{0, AllocationRecord{0, 0, 0}};
  --count_;
}

void AllocationTable::erase_context(std::uint64_t context,
                                    void (*released)(const AllocationRecord&)) {
  Lock lock(&mutex_);
  std::size_t index = 0;
  while (index < capacity_) {
    if (slots_[index].key != 0 && slots_[index].record.context == context) {
      released(slots_[index].record);
      // The shift may move an unvisited entry into this slot: look again.
      erase_index_locked(index);
      continue;
    }
    ++index;
  }
}

bool AllocationTable::adjust(std::uint64_t key, int reference_delta, int mapping_delta,
                             AllocationRecord* record, bool* gone) {
  Lock lock(&mutex_);
  *gone = false;
  if (capacity_ == 0 || key == 0) return false;
  std::size_t index = index_of(key);
  if (slots_[index].key == 0) return false;
  AllocationRecord& found = slots_[index].record;
  // Never below zero: a release the driver accepted for a reference we did
  // not see (a retain before we loaded) must not wrap.
  auto apply = [](std::uint32_t value, int delta) -> std::uint32_t {
    if (delta < 0 && value < static_cast<std::uint32_t>(-delta)) return 0;
    return static_cast<std::uint32_t>(static_cast<std::int64_t>(value) + delta);
  };
  found.references = apply(found.references, reference_delta);
  found.mappings = apply(found.mappings, mapping_delta);
  *record = found;
  if (found.references == 0 && found.mappings == 0) {
    erase_index_locked(index);
    *gone = true;
  }
  return true;
}

std::uint64_t AllocationTable::relink(std::uint64_t from, std::uint64_t to) {
  Lock lock(&mutex_);
  std::uint64_t total = 0;
  for (std::size_t index = 0; index < capacity_; ++index) {
    if (slots_[index].key != 0 && slots_[index].record.link == from) {
      slots_[index].record.link = to;
      total += slots_[index].record.bytes;
    }
  }
  return total;
}

std::size_t AllocationTable::keys(std::uint64_t* keys, std::size_t max) {
  Lock lock(&mutex_);
  std::size_t count = 0;
  for (std::size_t index = 0; index < capacity_ && count < max; ++index) {
    if (slots_[index].key != 0) keys[count++] = slots_[index].key;
  }
  return count;
}

std::size_t AllocationTable::size() {
  Lock lock(&mutex_);
  return count_;
}

void AllocationTable::clear() {
  // After fork only one thread exists in the child; re-initialise the lock
  // in case the parent held it at fork time.
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  std::memcpy(&mutex_, &fresh, sizeof fresh);
  if (slots_ != nullptr) std::memset(static_cast<void*>(slots_), 0, capacity_ * sizeof(Slot));
  count_ = 0;
}

}  // namespace gpushare::interpose
