#include <catch2/catch.hpp>
#include <cstdio>
#include <set>
#include <string>

#include "cudaapi/proc_table.h"

using gpushare::cudaapi::ProcStatus;
using gpushare::cudaapi::resolve_proc;

namespace {

std::string resolved(const char* name, int version, unsigned long long flags) {
  auto result = resolve_proc(name, version, flags);
  if (result.status == ProcStatus::kSymbolNotFound) return "<not found>";
  if (result.status == ProcStatus::kVersionNotSufficient) return "<version not sufficient>";
  return result.symbol;
}

}  // namespace

TEST_CASE("the export list matches nm -D of the stub libcuda", "[cudaapi]") {
  std::string command = std::string("nm -D --defined-only ") + GPUSHARE_STUB_LIBCUDA;
  std::FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::set<std::string> from_nm;
  char line[512];
  while (std::fgets(line, sizeof line, pipe)) {
    char address[64], type[8], name[400];
    if (std::sscanf(line, "%63s %7s %399s", address, type, name) == 3 && type[0] == 'T') {
      from_nm.insert(name);
    }
  }
  REQUIRE(pclose(pipe) == 0);
  std::size_t count = 0;
  const char* const* exports = gpushare::cudaapi::driver_exports(&count);
  std::set<std::string> ours(exports, exports + count);
  CHECK(ours == from_nm);
  CHECK(count >= 600);  // CUDA 13.0 has 637
}

TEST_CASE("every variant names an exported symbol", "[cudaapi]") {
  std::size_t count = 0;
  const auto* variants = gpushare::cudaapi::proc_variants(&count);
  CHECK(count >= 600);  // CUDA 13.0 has 634
  for (std::size_t i = 0; i < count; ++i) {
    INFO(variants[i].name << "@" << variants[i].version << " -> " << variants[i].symbol);
    CHECK(gpushare::cudaapi::is_driver_export(variants[i].symbol));
  }
}

TEST_CASE("requests resolve to the newest variant not newer than the version", "[cudaapi]") {
  CHECK(resolved("cuMemAlloc", 2000, 0) == "cuMemAlloc");
  CHECK(resolved("cuMemAlloc", 3020, 0) == "cuMemAlloc_v2");
  CHECK(resolved("cuMemAlloc", 13000, 0) == "cuMemAlloc_v2");
  CHECK(resolved("cuMemAlloc", 1000, 0) == "<version not sufficient>");
  CHECK(resolved("cuCtxCreate", 12000, 0) == "cuCtxCreate_v3");
  CHECK(resolved("cuCtxCreate", 13000, 0) == "cuCtxCreate_v4");
  CHECK(resolved("cuGetProcAddress", 11030, 0) == "cuGetProcAddress");
  CHECK(resolved("cuGetProcAddress", 12000, 0) == "cuGetProcAddress_v2");
  CHECK(resolved("cuCtxSynchronize", 13000, 0) == "cuCtxSynchronize_v2");
  CHECK(resolved("cuNoSuchThing", 13000, 0) == "<not found>");
  CHECK(resolved("", 13000, 0) == "<not found>");
  CHECK(resolved("cuMemAlloc_v2", 13000, 0) == "<not found>");  // requests use base names
}

TEST_CASE("the per-thread flag picks the _ptsz/_ptds twin where one exists", "[cudaapi]") {
  CHECK(resolved("cuLaunchKernel", 7000, 2) == "cuLaunchKernel_ptsz");
  CHECK(resolved("cuLaunchKernel", 7000, 0) == "cuLaunchKernel");
  CHECK(resolved("cuLaunchKernel", 7000, 1) == "cuLaunchKernel");
  CHECK(resolved("cuLaunchKernel", 4000, 2) == "cuLaunchKernel");  // twin newer than request
  CHECK(resolved("cuMemcpyHtoD", 7000, 2) == "cuMemcpyHtoD_v2_ptds");
  CHECK(resolved("cuMemAlloc", 12000, 2) == "cuMemAlloc_v2");  // no stream: no twin
  CHECK(resolved("cuMemAllocAsync", 11020, 2) == "cuMemAllocAsync_ptsz");
  CHECK(resolved("cuGraphLaunch", 10000, 2) == "cuGraphLaunch_ptsz");
}
