// Modules, libraries and functions. An image is parsed once
// (module_image.h says what each format yields); a function handle is a
// kernel of a module, and a library's kernel (CUkernel) is the same object,
// so either may be passed to a launch.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "simgpu/driver/internal.h"

using namespace gpushare::simgpu;
using namespace gpushare::simgpu::driver;

namespace {

constexpr int kDefaultMaxDynamicShared = 49152;

bool module_alive(const Module* module) {
  return module != nullptr && module->magic == kModuleMagic &&
         (module->ctx == nullptr || context_alive(module->ctx));
}

Module* lookup_module(const void* handle, bool library) {
  const Module* module = static_cast<const Module*>(handle);
  if (module == nullptr || !sim().modules.owns(module) || !module_alive(module)) return nullptr;
  if (library && !module->library) return nullptr;
  return const_cast<Module*>(module);
}

void unload(Module* module) {
  Driver& d = sim();
  for (Function* function = module->functions; function != nullptr;) {
    Function* next = function->next_in_module;
    d.functions.release(function);
    function = next;
  }
  module->functions = nullptr;
  release_module_image(&module->image);
  d.modules.release(module);
}

CUresult load(const void* image, bool library, Module** result) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (result == nullptr || image == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = sim();
  LocalLock lock;
  Context* ctx = nullptr;
  if (!library) {
    if (CUresult status = require_context(&ctx); status != CUDA_SUCCESS) return status;
  }
  ModuleImage parsed;
  char message[256];
  switch (parse_module_image(image, static_cast<std::int64_t>(d.config.default_kernel_ns), &parsed,
                             message, sizeof message)) {
    case ImageError::kNone:
      break;
    case ImageError::kInvalidImage:
      return CUDA_ERROR_INVALID_IMAGE;
    case ImageError::kInvalidPtx:
      return CUDA_ERROR_INVALID_PTX;
  }
  Module* module = d.modules.acquire();
  if (module == nullptr) {
    release_module_image(&parsed);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  module->ctx = ctx;
  module->library = library;
  module->image = parsed;
  module->magic = kModuleMagic;
  *result = module;
  return CUDA_SUCCESS;
}

// Reads a whole file, NUL-terminated, into malloc'd memory.
CUresult read_image_file(const char* path, char** contents) {
  if (path == nullptr) return CUDA_ERROR_INVALID_VALUE;
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return CUDA_ERROR_FILE_NOT_FOUND;
  struct stat info;
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode) || info.st_size > (1ll << 30)) {
    ::close(fd);
    return CUDA_ERROR_FILE_NOT_FOUND;
  }
  std::size_t size = static_cast<std::size_t>(info.st_size);
  char* buffer = static_cast<char*>(std::malloc(size + 1));
  std::size_t done = 0;
  while (buffer != nullptr && done < size) {
    ssize_t got = ::read(fd, buffer + done, size - done);
    if (got <= 0) break;
    done += static_cast<std::size_t>(got);
  }
  ::close(fd);
  if (buffer == nullptr || done != size) {
    std::free(buffer);
    return CUDA_ERROR_FILE_NOT_FOUND;
  }
  buffer[size] = '\0';
  *contents = buffer;
  return CUDA_SUCCESS;
}

CUresult get_function(Module* module, const char* name, Function** result) {
  if (name == nullptr || result == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (Function* function = module->functions; function != nullptr;
       function = function->next_in_module) {
    if (std::strcmp(function->kernel.name, name) == 0) {
      *result = function;
      return CUDA_SUCCESS;
    }
  }
  KernelInfo scratch;
  const KernelInfo* kernel = find_kernel(
      module->image, name, static_cast<std::int64_t>(sim().config.default_kernel_ns), &scratch);
  if (kernel == nullptr) return CUDA_ERROR_NOT_FOUND;
  Function* function = sim().functions.acquire();
  if (function == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  function->module = module;
  function->kernel = *kernel;
  function->max_dynamic_shared_bytes = kDefaultMaxDynamicShared;
  function->next_in_module = module->functions;
  module->functions = function;
  function->magic = kFunctionMagic;
  *result = function;
  return CUDA_SUCCESS;
}

CUresult function_attribute(int* value, CUfunction_attribute attribute, Function* function) {
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  switch (attribute) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *value = 1024;
      break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS:
      *value = 16;
      break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
      *value = 80;
      break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      *value = function->max_dynamic_shared_bytes;
      break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      *value = -1;
      break;
    default:
      if (attribute < 0 || attribute >= CU_FUNC_ATTRIBUTE_MAX) return CUDA_ERROR_INVALID_VALUE;
      *value = 0;
  }
  return CUDA_SUCCESS;
}

CUresult set_function_attribute(Function* function, CUfunction_attribute attribute, int value) {
  if (attribute == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
    if (value < 0 || value > 166912) return CUDA_ERROR_INVALID_VALUE;
    function->max_dynamic_shared_bytes = value;
  } else if (attribute < 0 || attribute >= CU_FUNC_ATTRIBUTE_MAX) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult load_library(CUlibrary* library, const void* code) {
  Module* module = nullptr;
  CUresult status = load(code, true, &module);
  if (status == CUDA_SUCCESS) *library = reinterpret_cast<CUlibrary>(module);
  return status;
}

}  // namespace

namespace gpushare::simgpu::driver {

Function* lookup_function(CUfunction handle) {
  Function* function = reinterpret_cast<Function*>(handle);
  if (function == nullptr || !sim().functions.owns(function) || function->magic != kFunctionMagic ||
      !module_alive(function->module)) {
    return nullptr;
  }
  return function;
}

void release_context_modules(Context* ctx) {
  sim().modules.for_each([&](Module* module) {
    if (module->magic == kModuleMagic && module->ctx == ctx) unload(module);
  });
}

}  // namespace gpushare::simgpu::driver

SIM_EXPORT CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  Module* loaded = nullptr;
  CUresult status = load(image, false, &loaded);
  if (status == CUDA_SUCCESS) *module = reinterpret_cast<CUmodule>(loaded);
  return status;
}

SIM_EXPORT CUresult cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int,
                                       CUjit_option*, void**) {
  return cuModuleLoadData(module, image);
}

SIM_EXPORT CUresult cuModuleLoadFatBinary(CUmodule* module, const void* image) {
  return cuModuleLoadData(module, image);
}

SIM_EXPORT CUresult cuModuleLoad(CUmodule* module, const char* path) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  char* contents = nullptr;
  if (CUresult status = read_image_file(path, &contents); status != CUDA_SUCCESS) return status;
  CUresult status = cuModuleLoadData(module, contents);
  std::free(contents);
  return status;
}

SIM_EXPORT CUresult cuModuleUnload(CUmodule handle) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  LocalLock lock;
  Module* module = lookup_module(handle, false);
  if (module == nullptr || module->library) return CUDA_ERROR_INVALID_HANDLE;
  unload(module);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuModuleGetFunction(CUfunction* result, CUmodule handle, const char* name) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  LocalLock lock;
  Module* module = lookup_module(handle, false);
  if (module == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  Function* function = nullptr;
  CUresult status = get_function(module, name, &function);
  if (status == CUDA_SUCCESS) *result = reinterpret_cast<CUfunction>(function);
  return status;
}

SIM_EXPORT CUresult cuModuleGetFunctionCount(unsigned int* count, CUmodule handle) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  LocalLock lock;
  Module* module = lookup_module(handle, false);
  if (module == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  *count = static_cast<unsigned>(module->image.kernel_count);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode* mode) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (mode == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *mode = CU_MODULE_EAGER_LOADING;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuLibraryLoadData(CUlibrary* library, const void* code, CUjit_option*, void**,
                                      unsigned int, CUlibraryOption*, void**, unsigned int) {
  if (library == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return load_library(library, code);
}

SIM_EXPORT CUresult cuLibraryLoadFromFile(CUlibrary* library, const char* path, CUjit_option*,
                                          void**, unsigned int, CUlibraryOption*, void**,
                                          unsigned int) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (library == nullptr) return CUDA_ERROR_INVALID_VALUE;
  char* contents = nullptr;
  if (CUresult status = read_image_file(path, &contents); status != CUDA_SUCCESS) return status;
  CUresult status = load_library(library, contents);
  std::free(contents);
  return status;
}

SIM_EXPORT CUresult cuLibraryUnload(CUlibrary handle) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  LocalLock lock;
  Module* module = lookup_module(handle, true);
  if (module == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  unload(module);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuLibraryGetKernel(CUkernel* kernel, CUlibrary handle, const char* name) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  LocalLock lock;
  Module* module = lookup_module(handle, true);
  if (module == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  Function* function = nullptr;
  CUresult status = get_function(module, name, &function);
  if (status == CUDA_SUCCESS) *kernel = reinterpret_cast<CUkernel>(function);
  return status;
}

SIM_EXPORT CUresult cuLibraryGetKernelCount(unsigned int* count, CUlibrary handle) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  LocalLock lock;
  Module* module = lookup_module(handle, true);
  if (module == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  *count = static_cast<unsigned>(module->image.kernel_count);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuLibraryGetModule(CUmodule* result, CUlibrary handle) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (result == nullptr) return CUDA_ERROR_INVALID_VALUE;
  LocalLock lock;
  Module* module = lookup_module(handle, true);
  if (module == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  *result = reinterpret_cast<CUmodule>(module);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuKernelGetFunction(CUfunction* result, CUkernel kernel) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (result == nullptr) return CUDA_ERROR_INVALID_VALUE;
  LocalLock lock;
  Context* ctx = nullptr;
  if (CUresult status = require_context(&ctx); status != CUDA_SUCCESS) return status;
  Function* function = lookup_function(reinterpret_cast<CUfunction>(kernel));
  if (function == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  *result = reinterpret_cast<CUfunction>(function);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuFuncGetName(const char** name, CUfunction handle) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  LocalLock lock;
  Function* function = lookup_function(handle);
  if (function == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  *name = function->kernel.name;
  return CUDA_SUCCESS;
}

// A kernel's arguments, as the real driver describes them (CUDA 12.4):
// gpushare_spin takes one u64 (its duration), the all-reduce stand-in
// (u64 bytes, u64 comm, u32 rank, u32 world_size); any other kernel takes
// none. Past the last argument: CUDA_ERROR_INVALID_VALUE.
SIM_EXPORT CUresult cuFuncGetParamInfo(CUfunction handle, size_t index, size_t* offset,
                                       size_t* size) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (offset == nullptr || size == nullptr) return CUDA_ERROR_INVALID_VALUE;
  LocalLock lock;
  Function* function = lookup_function(handle);
  if (function == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  static constexpr size_t kCollectiveOffsets[] = {0, 8, 16, 20};
  static constexpr size_t kCollectiveSizes[] = {8, 8, 4, 4};
  if (function->kernel.spin && index == 0) {
    *offset = 0;
    *size = 8;
    return CUDA_SUCCESS;
  }
  if (function->kernel.collective && index < 4) {
    *offset = kCollectiveOffsets[index];
    *size = kCollectiveSizes[index];
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;
}

SIM_EXPORT CUresult cuKernelGetParamInfo(CUkernel handle, size_t index, size_t* offset,
                                         size_t* size) {
  return cuFuncGetParamInfo(reinterpret_cast<CUfunction>(handle), index, offset, size);
}

SIM_EXPORT CUresult cuKernelGetName(const char** name, CUkernel handle) {
  return cuFuncGetName(name, reinterpret_cast<CUfunction>(handle));
}

SIM_EXPORT CUresult cuFuncGetModule(CUmodule* module, CUfunction handle) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (module == nullptr) return CUDA_ERROR_INVALID_VALUE;
  LocalLock lock;
  Function* function = lookup_function(handle);
  if (function == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  *module = reinterpret_cast<CUmodule>(function->module);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuFuncGetAttribute(int* value, CUfunction_attribute attribute,
                                       CUfunction handle) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  LocalLock lock;
  Function* function = lookup_function(handle);
  if (function == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  return function_attribute(value, attribute, function);
}

SIM_EXPORT CUresult cuFuncSetAttribute(CUfunction handle, CUfunction_attribute attribute,
                                       int value) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  LocalLock lock;
  Function* function = lookup_function(handle);
  if (function == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  return set_function_attribute(function, attribute, value);
}

SIM_EXPORT CUresult cuKernelGetAttribute(int* value, CUfunction_attribute attribute,
                                         CUkernel handle, CUdevice) {
  return cuFuncGetAttribute(value, attribute, reinterpret_cast<CUfunction>(handle));
}

SIM_EXPORT CUresult cuKernelSetAttribute(CUfunction_attribute attribute, int value, CUkernel handle,
                                         CUdevice) {
  return cuFuncSetAttribute(reinterpret_cast<CUfunction>(handle), attribute, value);
}

SIM_EXPORT CUresult cuFuncSetCacheConfig(CUfunction handle, CUfunc_cache) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  LocalLock lock;
  return lookup_function(handle) != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

SIM_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* blocks,
                                                                         CUfunction handle,
                                                                         int block_size, size_t,
                                                                         unsigned int) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (blocks == nullptr || block_size <= 0 || block_size > 1024) return CUDA_ERROR_INVALID_VALUE;
  LocalLock lock;
  if (lookup_function(handle) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  int by_threads = 2048 / block_size;
  *blocks = by_threads < 32 ? by_threads : 32;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, CUfunction handle,
                                                                int block_size,
                                                                size_t dynamic_shared) {
  return cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(blocks, handle, block_size,
                                                              dynamic_shared, 0);
}
