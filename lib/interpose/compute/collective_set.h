// Which kernels are collectives, without the driver: NCCL's by name, and
// the set of function handles known to be one, which the launch path asks.
//
// NCCL names its kernels ncclKernel_* (before 2.19) and ncclDevKernel_*
// (2.19 and later; C++ names, so cuFuncGetName gives them mangled, the
// prefix inside the name). The simulated GPU's all-reduce carries such a
// name too (simgpu/collective.h). A handle is learnt when the program looks
// a function up by name (cuModuleGetFunction, cuLibraryGetKernel) or turns
// a known kernel into a function (cuKernelGetFunction), never on the launch
// path. The set is open addressing over a fixed table of atomics: inserts
// under a lock (lookups are rare: a program's kernels are looked up once
// each), lookups lock-free. A process that never looked a collective up
// pays one relaxed load per launch (count() == 0).
#pragma once

#include <atomic>
#include <cstdint>

namespace gpushare::interpose {

/// Whether a kernel's name (mangled or not) is one of NCCL's.
bool is_collective_name(const char* name);

class CollectiveSet {
 public:
  static constexpr int kSlots = 512;  ///< NCCL has tens of kernels per job

  /// Adds a handle (ignored when null or when the table is full: the
  /// second is reported by the caller once). False when it did not fit.
  bool insert(const void* handle);
  bool contains(const void* handle) const;
  /// Handles in the set: 0 for a process without collectives.
  int count() const { return count_.load(std::memory_order_relaxed); }

 private:
  static unsigned slot_of(std::uintptr_t key) {
    return static_cast<unsigned>((key * 0x9E3779B97F4A7C15ull) >> 55) % kSlots;
  }
  std::atomic<std::uintptr_t> slots_[kSlots] = {};
  std::atomic<int> count_{0};
  std::atomic<bool> busy_{false};  ///< the insert lock (a spin: inserts are rare)
};

}  // namespace gpushare::interpose
