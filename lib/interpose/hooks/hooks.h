// Declarations of every wrapper, derived from hooks.def: gs_<symbol> is
// exported under the driver's own name <symbol> (an asm label, so cuda.h's
// renaming macros do not get in the way), and its type is exactly the
// cudaTypedefs.h PFN type of that variant, so a wrapper whose signature
// drifts from the driver's does not compile.
#pragma once

#include <type_traits>

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
/// lacks (an older driver) answers CUDA_ERROR_NOT_FOUND.
#define GS_REAL(symbol)                                                       \
  if (!::gpushare::interpose::driver_ready()) return CUDA_ERROR_NOT_INITIALIZED; \
  auto real = ::gpushare::interpose::g_runtime.real.real_##symbol;             \
  if (real == nullptr) return CUDA_ERROR_NOT_FOUND

/// Common prologue of wrappers that need the devices: loads the driver and
/// returns false when it cannot (the wrapper then returns `error`).
inline bool ready_or(CUresult* error) {
  if (driver_ready()) return true;
  *error = CUDA_ERROR_NOT_INITIALIZED;
  return false;
}

}  // namespace gpushare::interpose
