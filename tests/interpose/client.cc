// gs-client: a small driver-API program for the interposer's end-to-end
// tests. It binds the driver by one route and runs a list of commands:
//
//   gs-client [--bind dlsym|resolver|resolver-v1] [--version V] [--flags F] CMD...
//   gs-client-direct CMD...            (linked to libcuda.so.1: direct calls)
//
//   alloc SIZE | managed SIZE | async SIZE | pool SIZE | vmm SIZE
//   pitch WIDTH HEIGHT | array WIDTH HEIGHT
//   free            frees the newest allocation of any kind
//   fill | check    write a pattern into every allocation / verify it
//   meminfo | totalmem | nvml
//   threads N SIZE  N threads allocate SIZE until refused; prints the total
//   launch N        N launches of gpushare_spin (1 us) and a synchronise
//   forks N         N times: fork while 4 threads allocate and free; the
//                   child allocates 1 MiB and frees it (CUDA in a forked
//                   child is undefined on real drivers: this tests that the
//                   interposer's locks and state survive fork), prints nothing
//                   and exits; prints the children's results by exit status
//   hold            print "hold ready", then wait for end of input (keeps
//                   everything allocated while a test looks from outside)
//
// Each command prints one line "COMMAND key=value..."; a CUDA error is a
// value (result=N), not a failure of the program, so tests can assert it.
// Setup failures exit 1 naming the call.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Api {
  PFN_cuInit_v2000 init;
  PFN_cuDeviceGet_v2000 device_get;
  PFN_cuDevicePrimaryCtxRetain_v7000 primary_retain;
  PFN_cuCtxSetCurrent_v4000 set_current;
  PFN_cuMemAlloc_v3020 alloc;
  PFN_cuMemFree_v3020 free;
  PFN_cuMemAllocPitch_v3020 pitch;
  PFN_cuMemAllocManaged_v6000 managed;
  PFN_cuMemAllocAsync_v11020 alloc_async;
  PFN_cuMemAllocFromPoolAsync_v11020 alloc_pool;
  PFN_cuMemFreeAsync_v11020 free_async;
  PFN_cuDeviceGetDefaultMemPool_v11020 default_pool;
  PFN_cuMemCreate_v10020 mem_create;
  PFN_cuMemRelease_v10020 mem_release;
  PFN_cuMemGetAllocationGranularity_v10020 granularity;
  PFN_cuArrayCreate_v3020 array_create;
  PFN_cuArrayDestroy_v2000 array_destroy;
  PFN_cuMemGetInfo_v3020 mem_info;
  PFN_cuDeviceTotalMem_v3020 total_mem;
  PFN_cuMemcpyHtoD_v3020 copy_in;
  PFN_cuMemcpyDtoH_v3020 copy_out;
  PFN_cuStreamSynchronize_v2000 stream_sync;
  PFN_cuModuleLoadData_v2000 module_load;
  PFN_cuModuleGetFunction_v2000 module_function;
  PFN_cuLaunchKernel_v4000 launch;
  PFN_cuCtxSynchronize_v2000 ctx_sync;
  PFN_cuCtxCreate_v3020 ctx_create;
};

struct Binding {
  std::string mode = "dlsym";
  int version = 13000;
  unsigned long long flags = 0;
};

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "gs-client: error: %s\n", what);
  std::exit(1);
}

void check(CUresult result, const char* call) {
  if (result != CUDA_SUCCESS) {
    std::fprintf(stderr, "gs-client: error: %s: CUDA error %d\n", call, static_cast<int>(result));
    std::exit(1);
  }
}

#ifdef GS_CLIENT_DIRECT
// Exported by the driver (and its stub), but cuda.h 13 declares only _v4.
extern "C" CUresult cuCtxCreate_v2(CUcontext* context, unsigned int flags, CUdevice device);

void bind_api(const Binding&, Api* api) {
  *api = Api{&cuInit, &cuDeviceGet, &cuDevicePrimaryCtxRetain, &cuCtxSetCurrent,
             &cuMemAlloc_v2, &cuMemFree_v2, &cuMemAllocPitch_v2, &cuMemAllocManaged,
             &cuMemAllocAsync, &cuMemAllocFromPoolAsync, &cuMemFreeAsync,
             &cuDeviceGetDefaultMemPool, &cuMemCreate, &cuMemRelease,
             &cuMemGetAllocationGranularity, &cuArrayCreate_v2, &cuArrayDestroy,
             &cuMemGetInfo_v2, &cuDeviceTotalMem_v2, &cuMemcpyHtoD_v2, &cuMemcpyDtoH_v2,
             &cuStreamSynchronize, &cuModuleLoadData, &cuModuleGetFunction, &cuLaunchKernel,
             &cuCtxSynchronize, &cuCtxCreate_v2};
}
#else
void bind_api(const Binding& binding, Api* api) {
  // As the CUDA runtime does: a local dlopen, then dlsym on the handle.
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr) die(dlerror());
  PFN_cuGetProcAddress_v12000 resolve_v2 = nullptr;
  PFN_cuGetProcAddress_v11030 resolve_v1 = nullptr;
  if (binding.mode == "resolver") {
    resolve_v2 = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(driver, "cuGetProcAddress_v2"));
    if (resolve_v2 == nullptr) die("dlsym(cuGetProcAddress_v2) failed");
    // cudart then fetches the resolver through itself and uses that one.
    void* again = nullptr;
    CUdriverProcAddressQueryResult status;
    check(resolve_v2("cuGetProcAddress", &again, 12000, 0, &status), "cuGetProcAddress(cuGetProcAddress)");
    resolve_v2 = reinterpret_cast<PFN_cuGetProcAddress_v12000>(again);
  } else if (binding.mode == "resolver-v1") {
    resolve_v1 = reinterpret_cast<PFN_cuGetProcAddress_v11030>(dlsym(driver, "cuGetProcAddress"));
    if (resolve_v1 == nullptr) die("dlsym(cuGetProcAddress) failed");
  } else if (binding.mode != "dlsym") {
    die("--bind must be dlsym, resolver or resolver-v1");
  }
  // `since` is the first version of the ABI this client calls; `until`, when
  // set, the last (cuCtxSynchronize changed to take a context at 13000).
  auto get = [&](const char* base, const char* exported, int since, int until = 0) -> void* {
    void* pointer = nullptr;
    int version = binding.version < since ? since : binding.version;
    if (until != 0 && version > until) version = until;
    if (resolve_v2 != nullptr) {
      CUdriverProcAddressQueryResult status;
      if (resolve_v2(base, &pointer, version, binding.flags, &status) != CUDA_SUCCESS) return nullptr;
    } else if (resolve_v1 != nullptr) {
      if (resolve_v1(base, &pointer, version, binding.flags) != CUDA_SUCCESS) return nullptr;
    } else {
      pointer = dlsym(driver, exported);
    }
    return pointer;
  };
#define GS_GET(field, base, exported, ...) \
  api->field = reinterpret_cast<decltype(api->field)>(get(base, exported, __VA_ARGS__))
  GS_GET(init, "cuInit", "cuInit", 2000);
  GS_GET(device_get, "cuDeviceGet", "cuDeviceGet", 2000);
  GS_GET(primary_retain, "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain", 7000);
  GS_GET(set_current, "cuCtxSetCurrent", "cuCtxSetCurrent", 4000);
  GS_GET(ctx_create, "cuCtxCreate", "cuCtxCreate_v2", 3020);
  GS_GET(alloc, "cuMemAlloc", "cuMemAlloc_v2", 3020);
  GS_GET(free, "cuMemFree", "cuMemFree_v2", 3020);
  GS_GET(pitch, "cuMemAllocPitch", "cuMemAllocPitch_v2", 3020);
  GS_GET(managed, "cuMemAllocManaged", "cuMemAllocManaged", 6000);
  GS_GET(alloc_async, "cuMemAllocAsync", "cuMemAllocAsync", 11020);
  GS_GET(alloc_pool, "cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync", 11020);
  GS_GET(free_async, "cuMemFreeAsync", "cuMemFreeAsync", 11020);
  GS_GET(default_pool, "cuDeviceGetDefaultMemPool", "cuDeviceGetDefaultMemPool", 11020);
  GS_GET(mem_create, "cuMemCreate", "cuMemCreate", 10020);
  GS_GET(mem_release, "cuMemRelease", "cuMemRelease", 10020);
  GS_GET(granularity, "cuMemGetAllocationGranularity", "cuMemGetAllocationGranularity", 10020);
  GS_GET(array_create, "cuArrayCreate", "cuArrayCreate_v2", 3020);
  GS_GET(array_destroy, "cuArrayDestroy", "cuArrayDestroy", 2000);
  GS_GET(mem_info, "cuMemGetInfo", "cuMemGetInfo_v2", 3020);
  GS_GET(total_mem, "cuDeviceTotalMem", "cuDeviceTotalMem_v2", 3020);
  GS_GET(copy_in, "cuMemcpyHtoD", "cuMemcpyHtoD_v2", 3020);
  GS_GET(copy_out, "cuMemcpyDtoH", "cuMemcpyDtoH_v2", 3020);
  GS_GET(stream_sync, "cuStreamSynchronize", "cuStreamSynchronize", 2000);
  GS_GET(module_load, "cuModuleLoadData", "cuModuleLoadData", 2000);
  GS_GET(module_function, "cuModuleGetFunction", "cuModuleGetFunction", 2000);
  GS_GET(launch, "cuLaunchKernel", "cuLaunchKernel", 4000);
  GS_GET(ctx_sync, "cuCtxSynchronize", "cuCtxSynchronize", 2000, 12999);
#undef GS_GET
}
#endif

std::uint64_t parse_bytes(const char* text) {
  char* end = nullptr;
  double number = std::strtod(text, &end);
  std::uint64_t unit = 1;
  if (std::strcmp(end, "KiB") == 0) unit = 1ull << 10;
  else if (std::strcmp(end, "MiB") == 0) unit = 1ull << 20;
  else if (std::strcmp(end, "GiB") == 0) unit = 1ull << 30;
  else if (*end != '\0') die("bad size");
  return static_cast<std::uint64_t>(number * static_cast<double>(unit));
}

enum class Kind { kPlain, kAsync, kVmm, kArray };
struct Allocation {
  Kind kind;
  std::uint64_t address;  // device pointer, handle or array
  std::uint64_t bytes;
};

// The PTX of a kernel named gpushare_spin, enough for a module to load.
const char kSpinPtx[] =
    ".version 7.0\n.target sm_70\n.address_size 64\n"
    ".visible .entry gpushare_spin(.param .u64 duration_ns)\n{\n  ret;\n}\n";

}  // namespace

int main(int argc, char** argv) {
  Binding binding;
  int arg = 1;
  for (; arg + 1 < argc && std::strncmp(argv[arg], "--", 2) == 0; arg += 2) {
    if (std::strcmp(argv[arg], "--bind") == 0) binding.mode = argv[arg + 1];
    else if (std::strcmp(argv[arg], "--version") == 0) binding.version = std::atoi(argv[arg + 1]);
    else if (std::strcmp(argv[arg], "--flags") == 0) binding.flags = std::strtoull(argv[arg + 1], nullptr, 0);
    else die("unknown option");
  }
  Api api{};
  bind_api(binding, &api);
  if (api.init == nullptr || api.alloc == nullptr) die("the driver's entry points could not be bound");
  CUresult init_result = api.init(0);
  if (init_result != CUDA_SUCCESS) {
    std::printf("init result=%d\n", static_cast<int>(init_result));
    return 2;
  }
  CUdevice device;
  CUcontext context;
  check(api.device_get(&device, 0), "cuDeviceGet");
  check(api.primary_retain(&context, device), "cuDevicePrimaryCtxRetain");
  check(api.set_current(context), "cuCtxSetCurrent");

  std::vector<Allocation> allocations;
  auto require = [&](int count) {
    if (arg + count >= argc) die("missing argument");
  };
  for (++arg, --arg; arg < argc; ++arg) {
    std::string command = argv[arg];
    CUresult result = CUDA_SUCCESS;
    if (command == "alloc" || command == "managed" || command == "async" || command == "pool") {
      require(1);
      std::uint64_t bytes = parse_bytes(argv[++arg]);
      CUdeviceptr pointer = 0;
      if (command == "alloc") result = api.alloc(&pointer, bytes);
      if (command == "managed") result = api.managed(&pointer, bytes, CU_MEM_ATTACH_GLOBAL);
      if (command == "async") result = api.alloc_async(&pointer, bytes, nullptr);
      if (command == "pool") {
        CUmemoryPool pool;
        result = api.default_pool(&pool, device);
        if (result == CUDA_SUCCESS) result = api.alloc_pool(&pointer, bytes, pool, nullptr);
      }
      if (result == CUDA_SUCCESS) {
        Kind kind = command == "async" || command == "pool" ? Kind::kAsync : Kind::kPlain;
        allocations.push_back({kind, pointer, bytes});
      }
      std::printf("%s bytes=%llu result=%d\n", command.c_str(), static_cast<unsigned long long>(bytes),
                  static_cast<int>(result));
    } else if (command == "pitch") {
      require(2);
      std::size_t width = parse_bytes(argv[++arg]), height = parse_bytes(argv[++arg]), pitch = 0;
      CUdeviceptr pointer = 0;
      result = api.pitch(&pointer, &pitch, width, height, 4);
      if (result == CUDA_SUCCESS) allocations.push_back({Kind::kPlain, pointer, pitch * height});
      std::printf("pitch result=%d pitch=%zu\n", static_cast<int>(result), pitch);
    } else if (command == "vmm") {
      require(1);
      std::uint64_t bytes = parse_bytes(argv[++arg]);
      CUmemAllocationProp prop{};
      prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
      prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      prop.location.id = device;
      std::size_t granularity = 0;
      result = api.granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
      if (result == CUDA_SUCCESS && granularity > 0) {
        bytes = (bytes + granularity - 1) / granularity * granularity;
        CUmemGenericAllocationHandle handle = 0;
        result = api.mem_create(&handle, bytes, &prop, 0);
        if (result == CUDA_SUCCESS) allocations.push_back({Kind::kVmm, handle, bytes});
      }
      std::printf("vmm bytes=%llu result=%d\n", static_cast<unsigned long long>(bytes),
                  static_cast<int>(result));
    } else if (command == "array") {
      require(2);
      CUDA_ARRAY_DESCRIPTOR descriptor{};
      descriptor.Width = parse_bytes(argv[++arg]);
      descriptor.Height = parse_bytes(argv[++arg]);
      descriptor.Format = CU_AD_FORMAT_FLOAT;
      descriptor.NumChannels = 1;
      CUarray array = nullptr;
      result = api.array_create(&array, &descriptor);
      std::uint64_t bytes = descriptor.Width * descriptor.Height * 4;
      if (result == CUDA_SUCCESS) {
        allocations.push_back({Kind::kArray, reinterpret_cast<std::uint64_t>(array), bytes});
      }
      std::printf("array bytes=%llu result=%d\n", static_cast<unsigned long long>(bytes),
                  static_cast<int>(result));
    } else if (command == "free") {
      if (allocations.empty()) die("free: nothing allocated");
      Allocation last = allocations.back();
      allocations.pop_back();
      if (last.kind == Kind::kPlain) result = api.free(last.address);
      if (last.kind == Kind::kAsync) {
        result = api.free_async(last.address, nullptr);
        if (result == CUDA_SUCCESS) result = api.stream_sync(nullptr);
      }
      if (last.kind == Kind::kVmm) result = api.mem_release(last.address);
      if (last.kind == Kind::kArray) result = api.array_destroy(reinterpret_cast<CUarray>(last.address));
      std::printf("free bytes=%llu result=%d\n", static_cast<unsigned long long>(last.bytes),
                  static_cast<int>(result));
    } else if (command == "fill" || command == "check") {
      std::size_t bad = 0, checked = 0;
      for (std::size_t i = 0; i < allocations.size(); ++i) {
        const Allocation& a = allocations[i];
        if (a.kind != Kind::kPlain && a.kind != Kind::kAsync) continue;
        // A pattern that depends on the allocation and the offset, in 1 MiB chunks.
        std::vector<std::uint32_t> chunk(1 << 18);
        for (std::uint64_t offset = 0; offset < a.bytes; offset += chunk.size() * 4) {
          std::size_t length = std::min<std::uint64_t>(chunk.size() * 4, a.bytes - offset);
          std::size_t words = length / 4;
          if (command == "fill") {
            for (std::size_t w = 0; w < words; ++w) chunk[w] = static_cast<std::uint32_t>(i * 2654435761u + offset / 4 + w);
            result = api.copy_in(a.address + offset, chunk.data(), words * 4);
          } else {
            result = api.copy_out(chunk.data(), a.address + offset, words * 4);
            for (std::size_t w = 0; w < words; ++w) {
              bad += chunk[w] != static_cast<std::uint32_t>(i * 2654435761u + offset / 4 + w);
            }
            checked += words * 4;
          }
          if (result != CUDA_SUCCESS) break;
        }
      }
      if (command == "fill") std::printf("fill result=%d\n", static_cast<int>(result));
      else std::printf("check result=%d bytes=%zu bad_words=%zu\n", static_cast<int>(result), checked, bad);
    } else if (command == "meminfo") {
      std::size_t free = 0, total = 0;
      result = api.mem_info(&free, &total);
      std::printf("meminfo result=%d free=%zu total=%zu\n", static_cast<int>(result), free, total);
    } else if (command == "totalmem") {
      std::size_t total = 0;
      result = api.total_mem(&total, device);
      std::printf("totalmem result=%d total=%zu\n", static_cast<int>(result), total);
    } else if (command == "nvml") {
      struct Memory { unsigned long long total, free, used; } memory{};
      struct MemoryV2 { unsigned int version; unsigned long long total, reserved, free, used; } v2{};
      void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
      if (nvml == nullptr) die("dlopen(libnvidia-ml.so.1) failed");
      auto init = reinterpret_cast<int (*)()>(dlsym(nvml, "nvmlInit_v2"));
      auto by_index = reinterpret_cast<int (*)(unsigned, void**)>(dlsym(nvml, "nvmlDeviceGetHandleByIndex_v2"));
      auto info = reinterpret_cast<int (*)(void*, Memory*)>(dlsym(nvml, "nvmlDeviceGetMemoryInfo"));
      auto info_v2 = reinterpret_cast<int (*)(void*, MemoryV2*)>(dlsym(nvml, "nvmlDeviceGetMemoryInfo_v2"));
      if (!init || !by_index || !info || !info_v2) die("NVML entry points missing");
      void* handle = nullptr;
      int status = init();
      if (status == 0) status = by_index(0, &handle);
      if (status == 0) status = info(handle, &memory);
      v2.version = static_cast<unsigned>(sizeof v2) | (2u << 24);
      int status_v2 = status == 0 ? info_v2(handle, &v2) : status;
      std::printf("nvml result=%d total=%llu free=%llu used=%llu v2_result=%d v2_total=%llu v2_free=%llu v2_used=%llu v2_reserved=%llu\n",
                  status, memory.total, memory.free, memory.used, status_v2, v2.total, v2.free, v2.used,
                  v2.reserved);
    } else if (command == "threads") {
      require(2);
      int count = std::atoi(argv[++arg]);
      std::uint64_t bytes = parse_bytes(argv[++arg]);
      std::atomic<std::uint64_t> granted{0};
      std::atomic<int> other_errors{0};
      std::vector<std::thread> threads;
      std::vector<std::vector<CUdeviceptr>> held(count);
      for (int t = 0; t < count; ++t) {
        threads.emplace_back([&, t] {
          api.set_current(context);
          for (;;) {
            CUdeviceptr pointer = 0;
            CUresult r = api.alloc(&pointer, bytes);
            if (r == CUDA_ERROR_OUT_OF_MEMORY) break;
            if (r != CUDA_SUCCESS) { other_errors++; break; }
            held[t].push_back(pointer);
            granted += bytes;
          }
        });
      }
      for (auto& thread : threads) thread.join();
      std::size_t free = 0, total = 0;
      api.mem_info(&free, &total);
      std::printf("threads granted=%llu other_errors=%d free=%zu total=%zu\n",
                  static_cast<unsigned long long>(granted.load()), other_errors.load(), free, total);
      for (auto& list : held) for (CUdeviceptr p : list) api.free(p);
    } else if (command == "launch") {
      require(1);
      int count = std::atoi(argv[++arg]);
      CUmodule module;
      CUfunction function;
      result = api.module_load(&module, kSpinPtx);
      if (result == CUDA_SUCCESS) result = api.module_function(&function, module, "gpushare_spin");
      std::uint64_t duration_ns = 1000;
      void* params[] = {&duration_ns};
      for (int i = 0; i < count && result == CUDA_SUCCESS; ++i) {
        result = api.launch(function, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr);
      }
      if (result == CUDA_SUCCESS) result = api.ctx_sync();
      std::printf("launch count=%d result=%d\n", count, static_cast<int>(result));
    } else if (command == "contexts") {
      // Creates up to N contexts on device 0 and keeps them: how many the
      // driver (and the interposer) let it make, and why it stopped.
      require(1);
      int count = std::atoi(argv[++arg]);
      CUdevice device0 = 0;
      int created = 0;
      result = api.device_get(&device0, 0);
      for (int i = 0; i < count && result == CUDA_SUCCESS; ++i) {
        CUcontext extra = nullptr;
        result = api.ctx_create(&extra, 0, device0);
        if (result == CUDA_SUCCESS) ++created;
      }
      std::printf("contexts created=%d result=%d\n", created, static_cast<int>(result));
    } else if (command == "forks") {
      require(1);
      int count = std::atoi(argv[++arg]);
      std::atomic<bool> stop{false};
      std::vector<std::thread> threads;
      for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&] {
          api.set_current(context);
          while (!stop.load()) {
            CUdeviceptr pointer = 0;
            if (api.alloc(&pointer, 4096) == CUDA_SUCCESS) api.free(pointer);
          }
        });
      }
      int exited = 0, results[4] = {0, 0, 0, 0};
      for (int i = 0; i < count; ++i) {
        pid_t child = fork();
        if (child == 0) {
          CUdeviceptr pointer = 0;
          CUresult r = api.alloc(&pointer, 1 << 20);
          if (r == CUDA_SUCCESS) r = api.free(pointer);
          _exit(r == CUDA_SUCCESS ? 0 : 1);
        }
        int status = 0;
        if (child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status)) {
          ++exited;
          ++results[WEXITSTATUS(status) & 3];
        }
      }
      stop = true;
      for (auto& thread : threads) thread.join();
      std::printf("forks count=%d exited=%d succeeded=%d failed=%d\n", count, exited, results[0],
                  results[1]);
    } else if (command == "exec") {
      // Replaces the process with the rest of the command line, as a
      // script's last line does: same pid, a new program image.
      require(1);
      std::fflush(stdout);
      execv(argv[arg + 1], argv + arg + 1);
      die("exec failed");
    } else if (command == "hold") {
      std::printf("hold ready\n");
      std::fflush(stdout);
      char buffer[64];
      while (std::fread(buffer, 1, sizeof buffer, stdin) > 0) {
      }
    } else {
      std::fprintf(stderr, "gs-client: error: unknown command '%s'\n", command.c_str());
      return 1;
    }
    std::fflush(stdout);
  }
  return 0;
}
