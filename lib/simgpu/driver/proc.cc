// cuGetProcAddress and cuGetProcAddress_v2: (name, requested CUDA version,
// flags) -> the newest ABI variant not newer than the request, per-thread
// twin when flag 2 asks for it (lib/cudaapi's generated table), answered
// with this library's own address of that variant (exports.cc). Works
// before cuInit, as the CUDA runtime calls it first.
#include "cudaapi/proc_table.h"
#include "simgpu/driver/exports.h"
#include "simgpu/driver/internal.h"

using namespace gpushare::simgpu;
using namespace gpushare::simgpu::driver;

namespace {

constexpr cuuint64_t kKnownFlags =
    CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;

int simulated_driver_version() {
  int version = 0;
  cuDriverGetVersion(&version);
  return version;
}

// Resolves and reports the status; *pfn is null unless found.
CUresult resolve(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
                 CUdriverProcAddressQueryResult* status) {
  if (symbol == nullptr || pfn == nullptr || (flags & ~kKnownFlags) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pfn = nullptr;
  if (cuda_version > simulated_driver_version()) return CUDA_ERROR_INVALID_VALUE;
  gpushare::cudaapi::ProcResolution found =
      gpushare::cudaapi::resolve_proc(symbol, cuda_version, flags);
  CUdriverProcAddressQueryResult result = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (found.status == gpushare::cudaapi::ProcStatus::kSuccess) {
    *pfn = export_address(found.symbol);
    if (*pfn != nullptr) result = CU_GET_PROC_ADDRESS_SUCCESS;
  } else if (found.status == gpushare::cudaapi::ProcStatus::kVersionNotSufficient) {
    result = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
  }
  if (status != nullptr) *status = result;
  return CUDA_SUCCESS;
}

}  // namespace

SIM_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cuda_version,
                                        cuuint64_t flags, CUdriverProcAddressQueryResult* status) {
  // Found or not, the call itself succeeds; the status says which.
  return resolve(symbol, pfn, cuda_version, flags, status);
}

SIM_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int cuda_version,
                                     cuuint64_t flags) {
  // The CUDA 11 form has no status: a miss is CUDA_ERROR_NOT_FOUND.
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CUresult result = resolve(symbol, pfn, cuda_version, flags, &status);
  if (result != CUDA_SUCCESS) return result;
  return status == CU_GET_PROC_ADDRESS_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

SIM_EXPORT CUresult cuGetExportTable(const void** table, const CUuuid*) {
  // The CUDA runtime's private tables end in an integrity check that no
  // simulator can pass (docs/design.md, the simulated GPU): refuse, once loudly.
  static int logged;
  if (__atomic_exchange_n(&logged, 1, __ATOMIC_RELAXED) == 0) {
    log_message(
        "cuGetExportTable is not implemented by the simulated driver: CUDA runtime programs "
        "cannot run on it, only driver-API programs");
  }
  if (table != nullptr) *table = nullptr;
  return CUDA_ERROR_NOT_SUPPORTED;
}
