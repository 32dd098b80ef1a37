// gs-attack: plays a job that tries to hold more device memory than its
// limit through the driver's less travelled routes. It binds
// the driver as the CUDA runtime does (dlopen + dlsym) and runs one attack:
//
//   gs-attack vmm N SIZE        N times: cuMemCreate(SIZE), reserve, map,
//                               cuMemRelease while still mapped (the memory
//                               lives until the unmap); keeps the mappings
//   gs-attack vmm-cycle N SIZE  N times: create, map, release, unmap (the
//                               honest order: nothing stays held)
//   gs-attack pool N SIZE THRESHOLD [DEVICE]
//                               N times: a new pool on DEVICE (default 0)
//                               with release threshold THRESHOLD (max or a
//                               size), allocate SIZE from it, free it
//                               stream-ordered, no synchronisation: the
//                               pools keep what they reserved
//   gs-attack pool-cycle N SIZE one default-threshold pool: allocate, free,
//                               synchronise, N times (nothing stays held)
//   gs-attack loader HOW ROUTE N SIZE
//                               loads libgs-escape-helper.so (next to this
//                               program) with HOW = deepbind (dlopen
//                               RTLD_DEEPBIND) or newlm (dlmopen
//                               LM_ID_NEWLM) and lets it allocate N x SIZE
//                               by ROUTE = direct (cuMemAlloc_v2 linked) or
//                               resolver (dlopen + dlsym + cuGetProcAddress)
//   gs-attack unlimit N SIZE    waits for the coordinator's limits page,
//                               maps a private copy over it (MAP_FIXED) with
//                               every limit lifted, then allocates N x SIZE
//                               with cuMemAlloc: the in-process limit is gone,
//                               only the coordinator's own view is left
//   gs-attack used DEVICE       prints the device's used bytes as NVML
//                               reports them (run outside any job: the view
//                               from outside)
//   gs-attack legacy            resolves the legacy entry points at CUDA
//                               2000/3000 and tells who answered; allocates
//                               2 GiB through the 32-bit cuMemAlloc
//
// Each attack prints one line "ATTACK key=value..." (held= is what the
// attack holds at the end, result= the CUDA error that stopped it, 0 if
// none), then "hold ready" and waits for the end of its input, so a test
// can look at the GPU from outside while the memory is held.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "coord/contract/control_block.h"

namespace {

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "gs-attack: error: %s\n", what);
  std::exit(1);
}

void* g_driver = nullptr;

template <class F>
F bind(const char* name) {
  void* pointer = dlsym(g_driver, name);
  if (pointer == nullptr) die(name);
  return reinterpret_cast<F>(pointer);
}

std::uint64_t parse_bytes(const char* text) {
  char* end = nullptr;
  double number = std::strtod(text, &end);
  std::uint64_t unit = 1;
  if (std::strcmp(end, "MiB") == 0)
    unit = 1ull << 20;
  else if (std::strcmp(end, "GiB") == 0)
    unit = 1ull << 30;
  else if (*end != '\0')
    die("bad size");
  return static_cast<std::uint64_t>(number * static_cast<double>(unit));
}

void hold() {
  std::printf("hold ready\n");
  std::fflush(stdout);
  char buffer[64];
  while (std::fread(buffer, 1, sizeof buffer, stdin) > 0) {
  }
}

CUresult vmm_once(CUdevice device, std::uint64_t size, bool unmap) {
  auto create = bind<PFN_cuMemCreate_v10020>("cuMemCreate");
  auto release = bind<PFN_cuMemRelease_v10020>("cuMemRelease");
  auto reserve = bind<PFN_cuMemAddressReserve_v10020>("cuMemAddressReserve");
  auto map = bind<PFN_cuMemMap_v10020>("cuMemMap");
  auto unmap_range = bind<PFN_cuMemUnmap_v10020>("cuMemUnmap");
  auto address_free = bind<PFN_cuMemAddressFree_v10020>("cuMemAddressFree");
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  CUmemGenericAllocationHandle handle = 0;
  CUresult result = create(&handle, size, &prop, 0);
  if (result != CUDA_SUCCESS) return result;
  CUdeviceptr base = 0;
  result = reserve(&base, size, 0, 0, 0);
  if (result == CUDA_SUCCESS) result = map(base, size, 0, handle, 0);
  if (result != CUDA_SUCCESS) die("cuMemAddressReserve/cuMemMap failed");
  result = release(handle);  // the physical memory lives on in the mapping
  if (result != CUDA_SUCCESS) die("cuMemRelease failed");
  if (unmap) {
    if (unmap_range(base, size) != CUDA_SUCCESS || address_free(base, size) != CUDA_SUCCESS) {
      die("cuMemUnmap/cuMemAddressFree failed");
    }
  }
  return CUDA_SUCCESS;
}

CUresult pool_once(CUdevice device, std::uint64_t size, std::uint64_t threshold, bool sync) {
  auto create = bind<PFN_cuMemPoolCreate_v11020>("cuMemPoolCreate");
  auto set_attribute = bind<PFN_cuMemPoolSetAttribute_v11020>("cuMemPoolSetAttribute");
  auto allocate = bind<PFN_cuMemAllocFromPoolAsync_v11020>("cuMemAllocFromPoolAsync");
  auto free_async = bind<PFN_cuMemFreeAsync_v11020>("cuMemFreeAsync");
  auto synchronize = bind<PFN_cuStreamSynchronize_v2000>("cuStreamSynchronize");
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = device;
  CUmemoryPool pool = nullptr;
  if (create(&pool, &props) != CUDA_SUCCESS) die("cuMemPoolCreate failed");
  cuuint64_t value = threshold;
  if (set_attribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &value) != CUDA_SUCCESS) {
    die("cuMemPoolSetAttribute failed");
  }
  CUdeviceptr pointer = 0;
  CUresult result = allocate(&pointer, size, pool, nullptr);
  if (result != CUDA_SUCCESS) return result;
  if (free_async(pointer, nullptr) != CUDA_SUCCESS) die("cuMemFreeAsync failed");
  if (sync && synchronize(nullptr) != CUDA_SUCCESS) die("cuStreamSynchronize failed");
  return CUDA_SUCCESS;
}

// Where a resolved pointer lives: the basename of its object.
const char* owner(void* pointer) {
  Dl_info info{};
  if (pointer == nullptr || dladdr(pointer, &info) == 0 || info.dli_fname == nullptr) return "none";
  const char* slash = std::strrchr(info.dli_fname, '/');
  return slash != nullptr ? slash + 1 : info.dli_fname;
}

void legacy() {
  auto resolve = bind<PFN_cuGetProcAddress_v12000>("cuGetProcAddress_v2");
  static const char* const kNames[] = {"cuMemAlloc",      "cuMemAllocPitch",  "cuMemFree",
                                       "cuMemGetInfo",    "cuDeviceTotalMem", "cuArrayCreate",
                                       "cuArray3DCreate", "cuCtxCreate",      "cuCtxDestroy"};
  for (int version : {2000, 3000}) {
    for (const char* name : kNames) {
      void* pointer = nullptr;
      CUdriverProcAddressQueryResult status{};
      CUresult result = resolve(name, &pointer, version, 0, &status);
      std::printf("legacy name=%s version=%d result=%d owner=%s\n", name, version,
                  static_cast<int>(result), owner(pointer));
    }
  }
  // The 32-bit-size ABI: CUdeviceptr_v1 and unsigned int sizes.
  using LegacyAlloc = CUresult (*)(unsigned int*, unsigned int);
  using LegacyInfo = CUresult (*)(unsigned int*, unsigned int*);
  void* alloc_pointer = nullptr;
  void* info_pointer = nullptr;
  CUdriverProcAddressQueryResult status{};
  resolve("cuMemAlloc", &alloc_pointer, 2000, 0, &status);
  resolve("cuMemGetInfo", &info_pointer, 2000, 0, &status);
  unsigned int address = 0, free = 0, total = 0;
  CUresult alloc_result = reinterpret_cast<LegacyAlloc>(alloc_pointer)(&address, 2u << 30);
  CUresult info_result = reinterpret_cast<LegacyInfo>(info_pointer)(&free, &total);
  std::printf("legacy alloc_result=%d info_result=%d total=%u\n", static_cast<int>(alloc_result),
              static_cast<int>(info_result), total);
}

// The helper library next to this program.
std::string helper_path(const char* argv0) {
  std::string path = argv0;
  std::size_t slash = path.rfind('/');
  return (slash == std::string::npos ? std::string(".") : path.substr(0, slash)) +
         "/libgs-escape-helper.so";
}

int loader(const char* argv0, const char* how, const char* route, int count, std::uint64_t size) {
  std::string path = helper_path(argv0);
  void* helper = nullptr;
  if (std::strcmp(how, "deepbind") == 0) {
    helper = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  } else if (std::strcmp(how, "newlm") == 0) {
    helper = dlmopen(LM_ID_NEWLM, path.c_str(), RTLD_NOW | RTLD_LOCAL);
  } else {
    die("HOW must be deepbind or newlm");
  }
  if (helper == nullptr) die(dlerror());
  using Helper = int (*)(int, unsigned long long, unsigned long long*);
  std::string symbol = std::string("helper_") + route;
  auto function = reinterpret_cast<Helper>(dlsym(helper, symbol.c_str()));
  if (function == nullptr) die("ROUTE must be direct or resolver");
  unsigned long long held = 0;
  int result = function(count, size, &held);
  std::printf("loader how=%s route=%s held=%llu result=%d\n", how, route, held, result);
  std::fflush(stdout);
  hold();
  return 0;
}

// The start of the mapping of the coordinator's limits page, or 0.
std::uintptr_t limits_page() {
  FILE* maps = std::fopen("/proc/self/maps", "r");
  if (maps == nullptr) return 0;
  char line[512];
  std::uintptr_t start = 0;
  while (start == 0 && std::fgets(line, sizeof line, maps) != nullptr) {
    if (std::strstr(line, "memfd:gpushare-limits") != nullptr) {
      start = static_cast<std::uintptr_t>(std::strtoull(line, nullptr, 16));
    }
  }
  std::fclose(maps);
  return start;
}

int unlimit(int count, std::uint64_t size) {
  // Registration is asynchronous: wait for the page, with a generous deadline.
  std::uintptr_t page = 0;
  for (int tries = 0; tries < 1000 && (page = limits_page()) == 0; ++tries) usleep(10000);
  if (page == 0) die("no limits page: is the job registered with a coordinator?");
  auto* shared = reinterpret_cast<gpushare::coord::LimitsPage*>(page);
  alignas(4096) static unsigned char copy[gpushare::coord::kControlPageBytes];
  std::memcpy(copy, shared, sizeof copy);
  void* replaced = mmap(shared, sizeof copy, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  if (replaced != shared) die("mmap(MAP_FIXED) over the limits page failed");
  std::memcpy(replaced, copy, sizeof copy);
  for (auto& device : shared->devices) device.mem_limit_bytes.store(UINT64_MAX);
  auto alloc = bind<PFN_cuMemAlloc_v3020>("cuMemAlloc_v2");
  std::uint64_t held = 0;
  CUresult result = CUDA_SUCCESS;
  for (int i = 0; i < count && result == CUDA_SUCCESS; ++i) {
    CUdeviceptr pointer = 0;
    result = alloc(&pointer, size);
    if (result == CUDA_SUCCESS) held += size;
  }
  std::printf("unlimit held=%llu result=%d\n", static_cast<unsigned long long>(held),
              static_cast<int>(result));
  std::fflush(stdout);
  hold();
  return 0;
}

int device_used(int index) {
  struct Memory {
    unsigned long long total, free, used;
  } memory{};
  void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (nvml == nullptr) die(dlerror());
  auto init = reinterpret_cast<int (*)()>(dlsym(nvml, "nvmlInit_v2"));
  auto by_index =
      reinterpret_cast<int (*)(unsigned, void**)>(dlsym(nvml, "nvmlDeviceGetHandleByIndex_v2"));
  auto info = reinterpret_cast<int (*)(void*, Memory*)>(dlsym(nvml, "nvmlDeviceGetMemoryInfo"));
  if (init == nullptr || by_index == nullptr || info == nullptr) die("NVML entry points missing");
  void* handle = nullptr;
  if (init() != 0 || by_index(static_cast<unsigned>(index), &handle) != 0 ||
      info(handle, &memory) != 0) {
    die("NVML cannot tell the device's memory");
  }
  std::printf("used device=%d bytes=%llu\n", index, memory.used);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) die("usage: gs-attack vmm|vmm-cycle|pool|pool-cycle|legacy ARGS...");
  if (std::strcmp(argv[1], "used") == 0) return device_used(argc > 2 ? std::atoi(argv[2]) : 0);
  g_driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (g_driver == nullptr) die(dlerror());
  auto init = bind<PFN_cuInit_v2000>("cuInit");
  auto retain = bind<PFN_cuDevicePrimaryCtxRetain_v7000>("cuDevicePrimaryCtxRetain");
  auto set_current = bind<PFN_cuCtxSetCurrent_v4000>("cuCtxSetCurrent");
  CUcontext context = nullptr;
  if (init(0) != CUDA_SUCCESS || retain(&context, 0) != CUDA_SUCCESS ||
      set_current(context) != CUDA_SUCCESS) {
    die("cannot initialise device 0");
  }
  std::string_view attack = argv[1];
  if (attack == "unlimit") {
    if (argc < 4) die("usage: gs-attack unlimit N SIZE");
    return unlimit(std::atoi(argv[2]), parse_bytes(argv[3]));
  }
  if (attack == "loader") {
    if (argc < 6) die("usage: gs-attack loader deepbind|newlm direct|resolver N SIZE");
    return loader(argv[0], argv[2], argv[3], std::atoi(argv[4]), parse_bytes(argv[5]));
  }
  if (attack == "legacy") {
    legacy();
    return 0;
  }
  if (argc < 4) die("missing arguments");
  int count = std::atoi(argv[2]);
  std::uint64_t size = parse_bytes(argv[3]);
  std::uint64_t held = 0;
  CUresult result = CUDA_SUCCESS;
  int done = 0;
  for (; done < count && result == CUDA_SUCCESS; ++done) {
    if (attack == "vmm" || attack == "vmm-cycle") {
      result = vmm_once(0, size, attack == "vmm-cycle");
    } else if (attack == "pool" || attack == "pool-cycle") {
      bool cycle = attack == "pool-cycle";
      if (!cycle && argc < 5) die("missing the release threshold");
      std::uint64_t threshold = cycle                              ? 0
                                : std::strcmp(argv[4], "max") == 0 ? UINT64_MAX
                                                                   : parse_bytes(argv[4]);
      int device = !cycle && argc > 5 ? std::atoi(argv[5]) : 0;
      result = pool_once(device, size, threshold, cycle);
    } else {
      die("unknown attack");
    }
    if (result == CUDA_SUCCESS && attack.find("cycle") == std::string_view::npos) held += size;
  }
  if (result != CUDA_SUCCESS) --done;
  std::printf("%s done=%d held=%llu result=%d\n", argv[1], done,
              static_cast<unsigned long long>(held), static_cast<int>(result));
  std::fflush(stdout);
  hold();
  return 0;
}
