// The CUDA driver's entry points, as data generated at build time from the
// toolkit (see gen_tables.cc): every exported name, and the table that
// cuGetProcAddress answers from. Plain C-style code with no libstdc++
// runtime dependency, so the interposer and the simulated driver can link it.
#pragma once

#include <cstddef>

namespace gpushare::cudaapi {

/// One ABI variant: requesting `name` at `version` or later (with the
/// per-thread-default-stream flag when `per_thread`) yields `symbol`.
struct ProcVariant {
  const char* name;
  int version;
  bool per_thread;
  const char* symbol;
};

/// As CUdriverProcAddressQueryResult.
enum class ProcStatus { kSuccess = 0, kSymbolNotFound = 1, kVersionNotSufficient = 2 };

struct ProcResolution {
  ProcStatus status;
  const char* symbol;  ///< the exported name, e.g. "cuMemAlloc_v2"; nullptr unless kSuccess
};

/// CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM.
inline constexpr unsigned long long kPerThreadFlag = 2;

/// Resolves (name, requested version, flags) as the driver does: the newest
/// variant not newer than `cuda_version`; with the per-thread flag, the
/// _ptsz/_ptds twin where one exists at that version, else the ordinary one.
ProcResolution resolve_proc(const char* name, int cuda_version, unsigned long long flags);

/// All variants, sorted by (name, per_thread, version).
const ProcVariant* proc_variants(std::size_t* count);

/// Every function the CUDA stub libcuda.so exports, sorted.
const char* const* driver_exports(std::size_t* count);

/// True when `symbol` is one of driver_exports().
bool is_driver_export(const char* symbol);

}  // namespace gpushare::cudaapi
