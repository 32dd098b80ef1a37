// How a program finds the driver's entry points, and how each route leads to
// our wrappers:
//   - direct calls: the dynamic loader binds them to our exported symbols,
//     because LD_PRELOAD puts us first;
//   - dlsym(handle, "cu...") on a dlopen'ed libcuda.so.1 (the CUDA runtime
//     does this): our dlsym, exported under both glibc symbol versions,
//     answers wrapped names with our wrappers whatever the handle;
//   - cuGetProcAddress/_v2(name, version, flags): we ask the real resolver,
//     then map (name, version, flags) to the exact exported variant with the
//     table generated from cudaTypedefs.h, and return that variant's wrapper,
//     only when the real pointer is the one we wrap: a variant this build
//     does not know (a newer driver) passes through untouched instead of
//     being answered with a wrapper of the wrong ABI.
// Lookups with RTLD_NEXT, and names we do not wrap, go to glibc's dlsym as
// a tail call, so glibc still sees the program as the caller (RTLD_NEXT is
// relative to the caller's object).
#include <dlfcn.h>

#include <atomic>
#include <cstring>

#include "cudaapi/proc_table.h"
#include "interpose/hooks/hooks.h"
#include "interpose/core/log.h"
#include "interpose/driver/real_nvml.h"
#include "interpose/driver/real_dlsym.h"

namespace gpushare::interpose {
namespace {

#define GS_HOOK(symbol, type)                                               \
  Hook{#symbol, reinterpret_cast<void*>(&gs_##symbol),                      \
       reinterpret_cast<void* const*>(&g_runtime.real.real_##symbol)},
const Hook kHooks[] = {
#include "interpose/driver/hooks.def"
};
#undef GS_HOOK

// NVML entry points we answer (hooks_info.cc), by name.
struct NvmlHook {
  const char* name;
  void* wrapper;
};
const NvmlHook kNvmlHooks[] = {
    {"nvmlDeviceGetMemoryInfo", reinterpret_cast<void*>(&nvmlDeviceGetMemoryInfo)},
    {"nvmlDeviceGetMemoryInfo_v2", reinterpret_cast<void*>(&nvmlDeviceGetMemoryInfo_v2)},
};

using DlsymFunction = void* (*)(void*, const char*);
std::atomic<DlsymFunction> g_real_dlsym_new{nullptr};
std::atomic<DlsymFunction> g_real_dlsym_old{nullptr};

DlsymFunction find_glibc_dlsym(const char* preferred_version) {
  static const char* const kVersions[] = {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17", "GLIBC_2.0"};
  void* found = dlvsym(RTLD_NEXT, "dlsym", preferred_version);
  for (const char* version : kVersions) {
    if (found != nullptr) break;
    found = dlvsym(RTLD_NEXT, "dlsym", version);
  }
  return reinterpret_cast<DlsymFunction>(found);
}

inline DlsymFunction glibc_dlsym(std::atomic<DlsymFunction>& cache, const char* version) {
  DlsymFunction function = cache.load(std::memory_order_acquire);
  if (function == nullptr) {
    function = find_glibc_dlsym(version);
    cache.store(function, std::memory_order_release);
  }
  return function;
}

// Only names of the driver and NVML can be ours; everything else is
// rejected on its first bytes, so a program's many other dlsym calls cost
// almost nothing extra.
inline bool may_be_hooked(const char* name) {
  return name != nullptr && ((name[0] == 'c' && name[1] == 'u') ||
                             (name[0] == 'n' && name[1] == 'v' && name[2] == 'm'));
}

// Our answer for dlsym(handle, name), or nullptr to pass it on.
void* dlsym_answer(void* handle, const char* name) {
  if (handle == RTLD_NEXT || !may_be_hooked(name) || g_runtime.settings.disabled) return nullptr;
  if (name[0] == 'n') {
    for (const NvmlHook& hook : kNvmlHooks) {
      if (std::strcmp(hook.name, name) == 0) {
        GS_DEBUG("dlsym(%s): wrapped", name);
        return hook.wrapper;
      }
    }
    return nullptr;
  }
  const Hook* hook = find_hook(name);
  if (hook == nullptr) return nullptr;
  GS_DEBUG("dlsym(%s): wrapped", name);
  return hook->wrapper;
}

// The pointer to hand out for a real resolver answer.
void* resolver_answer(const char* name, int version, cuuint64_t flags, void* real) {
  cudaapi::ProcResolution resolution = cudaapi::resolve_proc(name, version, flags);
  if (resolution.status != cudaapi::ProcStatus::kSuccess) {
    GS_DEBUG("cuGetProcAddress(%s, %d, %llu): unknown variant, passed through", name, version,
             static_cast<unsigned long long>(flags));
    return real;
  }
  const Hook* hook = find_hook(resolution.symbol);
  if (hook == nullptr) {
    GS_DEBUG("cuGetProcAddress(%s, %d, %llu): %s, passed through", name, version,
             static_cast<unsigned long long>(flags), resolution.symbol);
    return real;
  }
  if (*hook->real != real) {
    GS_WARN("cuGetProcAddress(%s, %d, %llu): the driver answered a variant other than %s; "
            "passed through unwrapped",
            name, version, static_cast<unsigned long long>(flags), resolution.symbol);
    return real;
  }
  GS_DEBUG("cuGetProcAddress(%s, %d, %llu): %s, wrapped", name, version,
           static_cast<unsigned long long>(flags), resolution.symbol);
  return hook->wrapper;
}

}  // namespace

const Hook* find_hook(const char* symbol) {
  for (const Hook& hook : kHooks) {
    if (std::strcmp(hook.symbol, symbol) == 0) return &hook;
  }
  return nullptr;
}

void* real_dlsym(void* handle, const char* name) {
  DlsymFunction function = glibc_dlsym(g_real_dlsym_new, "GLIBC_2.34");
  return function == nullptr ? nullptr : function(handle, name);
}

}  // namespace gpushare::interpose

using gpushare::interpose::dlsym_answer;

// dlsym, exported twice: programs linked against glibc >= 2.34 reference
// dlsym@GLIBC_2.34, older ones dlsym@GLIBC_2.2.5. The pass-through must stay
// a tail call (see the file comment); tests/e2e/interpose/dlsym-next.sh
// checks that RTLD_NEXT still works through us.
extern "C" __attribute__((visibility("default"))) void* gpushare_dlsym_new(void* handle,
                                                                          const char* name) {
  if (void* ours = dlsym_answer(handle, name)) return ours;
  return gpushare::interpose::glibc_dlsym(gpushare::interpose::g_real_dlsym_new,
                                          "GLIBC_2.34")(handle, name);
}

extern "C" __attribute__((visibility("default"))) void* gpushare_dlsym_old(void* handle,
                                                                          const char* name) {
  if (void* ours = dlsym_answer(handle, name)) return ours;
  return gpushare::interpose::glibc_dlsym(gpushare::interpose::g_real_dlsym_old,
                                          "GLIBC_2.2.5")(handle, name);
}
__asm__(".symver gpushare_dlsym_new, dlsym@@GLIBC_2.34");
__asm__(".symver gpushare_dlsym_old, dlsym@GLIBC_2.2.5");

using namespace gpushare::interpose;

CUresult gs_cuGetProcAddress_v2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                                CUdriverProcAddressQueryResult* status) {
  CUresult error;
  if (!ready_or(&error)) return error;
  const RealDriver& real = g_runtime.real;
  CUdriverProcAddressQueryResult real_status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CUresult result;
  if (real.real_cuGetProcAddress_v2 != nullptr) {
    result = real.real_cuGetProcAddress_v2(symbol, pfn, version, flags, &real_status);
  } else if (real.real_cuGetProcAddress != nullptr) {
    result = real.real_cuGetProcAddress(symbol, pfn, version, flags);
    real_status = result == CUDA_SUCCESS ? CU_GET_PROC_ADDRESS_SUCCESS
                                         : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  } else {
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  if (status != nullptr) *status = real_status;
  if (result == CUDA_SUCCESS && pfn != nullptr && *pfn != nullptr && symbol != nullptr &&
      !g_runtime.settings.disabled) {
    *pfn = resolver_answer(symbol, version, flags, *pfn);
  }
  return result;
}

CUresult gs_cuGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  return gs_cuGetProcAddress_v2(symbol, pfn, version, flags, nullptr);
}
