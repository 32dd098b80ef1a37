// Declarations of every wrapper, derived from hooks.def: gs_<symbol> is
// exported under the driver's own name <symbol> (an asm label, so cuda.h's
// renaming macros do not get in the way), and its type is exactly the
// cudaTypedefs.h PFN type of that variant, so a wrapper whose signature
// drifts from the driver's does not compile.
#pragma once

#include <type_traits>

#include "interpose/compute/launch_queue.h"
#include "interpose/core/runtime.h"

#define GS_HOOK(symbol, type) \
  GS_EXPORT std::remove_pointer_t<type> gs_##symbol __asm__(#symbol);
#include "interpose/driver/hooks.def"
#undef GS_HOOK

namespace gpushare::interpose {

/// One wrapped entry point: its exported name, our wrapper, the real one.
struct Hook {
  const char* symbol;
  void* wrapper;
  void* const* real;
};

/// The hook for an exported symbol name, or nullptr.
const Hook* find_hook(const char* symbol);

/// Prologue of every wrapper: `real` is the driver's own entry point.
/// Before the driver is loaded this loads it; an entry point the driver
/// lacks (an older driver) answers CUDA_ERROR_NOT_FOUND. With launches in
/// the launch queue it waits until they reached the driver, so that the
/// call comes after them (compute/launch_queue.h), and answers the error
/// one of them met, if any: one relaxed load when the queue is empty.
#define GS_REAL(symbol) GS_REAL_SLOT(real_##symbol)
/// The same for a RealDriver slot named in full (a macro that pastes the
/// name itself, since cuda.h renames some base names).
#define GS_REAL_SLOT(slot)                                                          \
  if (!::gpushare::interpose::driver_ready()) return CUDA_ERROR_NOT_INITIALIZED;       \
  auto real = ::gpushare::interpose::g_runtime.real.slot;                            \
  if (real == nullptr) return CUDA_ERROR_NOT_FOUND;                                  \
  if (__builtin_expect(::gpushare::interpose::launch_queue_busy(), 0)) {             \
    if (CUresult queued_error = ::gpushare::interpose::launch_queue_drain();         \
        queued_error != CUDA_SUCCESS)                                                \
      return queued_error;                                                           \
  }                                                                                  \
  static_assert(true)

/// Common prologue of wrappers that need the devices: loads the driver and
/// returns false when it cannot (the wrapper then returns `error`).
inline bool ready_or(CUresult* error) {
  if (driver_ready()) return true;
  *error = CUDA_ERROR_NOT_INITIALIZED;
  return false;
}

}  // namespace gpushare::interpose
