// Memory accounting of one job, per device.
//
// Reserve before allocate: an allocation first adds its size to the
// device's held bytes with a compare-and-swap that refuses to pass the limit,
// then calls the driver, and gives the bytes back if the driver fails. Two
// threads can therefore never exceed the limit together, which a
// check-then-allocate scheme cannot promise.
//
// The allocation table remembers the size and device of every allocation
// we charged, keyed by device pointer or handle, so that frees give back
// exactly what was charged and frees of memory we never saw pass through.
// It is an open-addressing hash table with linear probing and
// backward-shift deletion (no tombstones), guarded by one mutex: allocation
// and free are not the launch path, and a mutex costs tens of nanoseconds
// uncontended. Storage comes from mmap, never from libstdc++.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "vocab/job.h"

namespace gpushare::interpose {

class DeviceBudget {
 public:
  /// Adds `bytes` to what is held unless that would pass `limit`. When the
  /// budget is attached to a job's process tree, the limit holds for the
  /// tree's sum; on refusal the tree's dead processes are reclaimed once and
  /// the reservation tried again.
  bool try_reserve(std::uint64_t bytes, std::uint64_t limit);
  /// Adds `bytes` whatever the limit (memory the driver took on its own,
  /// such as a context's).
  void charge(std::uint64_t bytes);
  /// Gives bytes back; never goes below zero.
  void release(std::uint64_t bytes);
  /// What the job holds: the tree's sum when attached, else this process's.
  std::uint64_t held() const;
  /// What this process holds.
  std::uint64_t own() const { return local_->load(std::memory_order_relaxed); }
  std::uint64_t peak() const { return peak_.load(std::memory_order_relaxed); }
  /// Forgets everything and detaches from the tree (after fork: the child
  /// has no CUDA state, and its parent's slot is not its own).
  void reset();
  /// Also stores every new held value into `mirror` (the telemetry the
  /// coordinator reads); nullptr for none.
  void set_mirror(std::atomic<std::uint64_t>* mirror) { mirror_ = mirror; }
  /// Counts this process's holdings in `local` (its slot in the tree's
  /// shared file, which starts at what the process holds now) and the
  /// tree's sum in `tree`; `reclaim` gives back the charges of the tree's
  /// dead processes and says whether it found any.
  void attach(std::atomic<std::uint64_t>* tree, std::atomic<std::uint64_t>* local,
              bool (*reclaim)());

 private:
  bool reserve_on(std::atomic<std::uint64_t>* counter, std::uint64_t bytes, std::uint64_t limit);
  void note(std::uint64_t held);
  std::atomic<std::uint64_t> held_{0};
  std::atomic<std::uint64_t> peak_{0};
  std::atomic<std::uint64_t>* local_ = &held_;
  std::atomic<std::uint64_t>* tree_ = nullptr;
  bool (*reclaim_)() = nullptr;
  std::atomic<std::uint64_t>* mirror_ = nullptr;
};

/// What a job is shown of a device's memory.
struct MemoryView {
  std::uint64_t total;
  std::uint64_t free;
  std::uint64_t used;
  std::uint64_t reserved;  ///< total - used - free: capacity others hold now
};

/// total = min(limit, physical); used = what the job holds, at most total
/// (after a live decrease it may hold more); free = what is left of total,
/// but never more than is physically free now (other jobs may hold the
/// rest); reserved = the remainder, so that total = used + free + reserved.
MemoryView virtual_view(std::uint64_t limit, std::uint64_t physical_total,
                        std::uint64_t physical_free, std::uint64_t held);

struct AllocationRecord {
  std::uint64_t bytes;
  int device;
  std::uint64_t context;         ///< the context it dies with, or 0
  std::uint64_t link = 0;        ///< a VMM mapping's handle; a pool allocation's pool
  std::uint32_t references = 0;  ///< a VMM handle: creations and retains not yet released
  std::uint32_t mappings = 0;    ///< a VMM handle: its live mappings
  std::uint8_t spillable = 0;    ///< managed memory standing in for device memory (spill.h)
  std::uint8_t on_host = 0;      ///< spillable and moved to the host by spill.cc
  /// Backed by the VMM API so that a suspend can release it (vmm_backing.h);
  /// `link` is its physical handle, or its host copy while suspended.
  std::uint8_t vmm_backed = 0;
  std::uint8_t suspended = 0;  ///< moved to the host by a suspend (suspend.h)
};

class AllocationTable {
 public:
  /// Records key -> (bytes, device); false when out of memory for the table
  /// (the caller then treats the allocation as untracked).
  bool insert(std::uint64_t key, const AllocationRecord& record);
  /// Removes key; false when it was never recorded.
  bool erase(std::uint64_t key, AllocationRecord* record);
  bool find(std::uint64_t key, AllocationRecord* record);
  std::size_t size();
  /// Removes every record of `context`, calling `released` for each (under
  /// the table's lock: it must not call back into the table).
  void erase_context(std::uint64_t context, void (*released)(const AllocationRecord&));
  /// Adds the deltas to key's references and mappings. When both reach
  /// zero the record is removed and *gone set. False when key is unknown.
  bool adjust(std::uint64_t key, int reference_delta, int mapping_delta, AllocationRecord* record,
              bool* gone);
  /// Sets key's on_host flag and copies the record as it was before; false
  /// when key is unknown (freed meanwhile: nothing changes).
  bool set_on_host(std::uint64_t key, bool on_host, AllocationRecord* before);
  /// Replaces key's record; false when key is unknown (freed meanwhile).
  bool replace(std::uint64_t key, const AllocationRecord& record);
  /// Sets the link of every record linked to `from` to `to`; returns the
  /// sum of their bytes.
  std::uint64_t relink(std::uint64_t from, std::uint64_t to);
  /// Copies up to `max` keys into `keys`; returns how many.
  std::size_t keys(std::uint64_t* keys, std::size_t max);
  /// Forgets everything (after fork: the child has no CUDA allocations).
  void clear();

 private:
  struct Slot {
    std::uint64_t key;  // 0 = empty (no allocation has address or handle 0)
    AllocationRecord record;
  };
  void erase_index_locked(std::size_t hole);
  bool grow_locked();
  std::size_t index_of(std::uint64_t key) const;
  pthread_mutex_t mutex_ = PTHREAD_MUTEX_INITIALIZER;
  Slot* slots_ = nullptr;
  std::size_t capacity_ = 0;  // a power of two
  std::size_t count_ = 0;
};

}  // namespace gpushare::interpose
