#include "cudaapi/proc_table.h"

#include <cstring>

namespace gpushare::cudaapi {
namespace {

constexpr ProcVariant kVariants[] = {
#include "proc_variants.inc"
};
constexpr std::size_t kVariantCount = sizeof kVariants / sizeof kVariants[0];

#define GPUSHARE_DRIVER_EXPORT(name) #name,
constexpr const char* kExports[] = {
#include "driver_exports.inc"
};
#undef GPUSHARE_DRIVER_EXPORT
constexpr std::size_t kExportCount = sizeof kExports / sizeof kExports[0];

// First index whose name is not less than `name` (rows are sorted by name).
std::size_t lower_bound_name(const char* name) {
  std::size_t low = 0, high = kVariantCount;
  while (low < high) {
    std::size_t middle = low + (high - low) / 2;
    if (std::strcmp(kVariants[middle].name, name) < 0) {
      low = middle + 1;
    } else {
      high = middle;
    }
  }
  return low;
}

}  // namespace

ProcResolution resolve_proc(const char* name, int cuda_version, unsigned long long flags) {
  if (name == nullptr || *name == '\0') return {ProcStatus::kSymbolNotFound, nullptr};
  std::size_t first = lower_bound_name(name);
  if (first == kVariantCount || std::strcmp(kVariants[first].name, name) != 0) {
    return {ProcStatus::kSymbolNotFound, nullptr};
  }
  const ProcVariant* best_ordinary = nullptr;
  const ProcVariant* best_per_thread = nullptr;
  for (std::size_t i = first; i < kVariantCount && std::strcmp(kVariants[i].name, name) == 0; ++i) {
    const ProcVariant& row = kVariants[i];
    if (row.version > cuda_version) continue;
    // Rows ascend by version within each kind, so the last match is the newest.
    (row.per_thread ? best_per_thread : best_ordinary) = &row;
  }
  const ProcVariant* chosen = best_ordinary;
  if ((flags & kPerThreadFlag) != 0 && best_per_thread != nullptr) chosen = best_per_thread;
  if (chosen == nullptr) return {ProcStatus::kVersionNotSufficient, nullptr};
  return {ProcStatus::kSuccess, chosen->symbol};
}

const ProcVariant* proc_variants(std::size_t* count) {
  *count = kVariantCount;
  return kVariants;
}

const char* const* driver_exports(std::size_t* count) {
  *count = kExportCount;
  return kExports;
}

bool is_driver_export(const char* symbol) {
  std::size_t low = 0, high = kExportCount;
  while (low < high) {
    std::size_t middle = low + (high - low) / 2;
    int order = std::strcmp(kExports[middle], symbol);
    if (order == 0) return true;
    if (order < 0) {
      low = middle + 1;
    } else {
      high = middle;
    }
  }
  return false;
}

}  // namespace gpushare::cudaapi
