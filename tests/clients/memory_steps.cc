// gpushare-cuda-client's memory steps (client_state.h).
#include <dlfcn.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "client_state.h"
#include "common/units.h"
#include "copy_steps.h"

namespace gpushare::clients {

void field(Client& client, const char* name, unsigned long long value) {
  client.json += ",\"" + std::string(name) + "\":" + std::to_string(value);
}
void field(Client& client, const char* name, const std::string& value) {
  client.json += ",\"" + std::string(name) + "\":\"" + value + "\"";
}
void field_raw(Client& client, const char* name, const std::string& raw) {
  client.json += ",\"" + std::string(name) + "\":" + raw;
}

bool parse_number(const std::string& text, unsigned long long* value) {
  if (text.empty()) return false;
  char* end = nullptr;
  *value = std::strtoull(text.c_str(), &end, 0);
  return *end == '\0';
}

bool parse_bytes(const std::string& text, std::size_t* bytes) {
  auto parsed = gpushare::parse_size(text);
  if (!parsed) return false;
  *bytes = static_cast<std::size_t>(*parsed);
  return true;
}

double wall_ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// Runs one step. Returns false for a malformed step (usage error).

namespace {

CUmemAllocationProp device_properties(CUdevice device) {
  CUmemAllocationProp properties{};
  properties.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  properties.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  properties.location.id = device;
  return properties;
}

CUresult allocate(Client& client, const std::string& kind, std::size_t bytes) {
  const Api& api = client.api;
  Held held{kind, 0, bytes, 0, nullptr};
  CUresult status = CUDA_ERROR_INVALID_VALUE;
  if (kind == "plain") {
    status = api.cuMemAlloc_v2(&held.pointer, bytes);
  } else if (kind == "pitch") {
    // 1024 rows wide enough for the request; charged pitch x rows.
    std::size_t pitch = 0;
    status = api.cuMemAllocPitch_v2(&held.pointer, &pitch, (bytes + 1023) / 1024, 1024, 4);
    held.bytes = pitch * 1024;
  } else if (kind == "managed" || kind == "managed-host") {
    status = api.cuMemAllocManaged(&held.pointer, bytes,
                                   kind == "managed" ? CU_MEM_ATTACH_GLOBAL : CU_MEM_ATTACH_HOST);
  } else if (kind == "async") {
    status = api.cuMemAllocAsync(&held.pointer, bytes, client.stream);
  } else if (kind == "pool") {
    if (client.pool == nullptr) {
      CUmemPoolProps properties{};
      properties.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
      properties.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      properties.location.id = client.device;
      status = api.cuMemPoolCreate(&client.pool, &properties);
      if (status != CUDA_SUCCESS) return status;
    }
    status = api.cuMemAllocFromPoolAsync(&held.pointer, bytes, client.pool, client.stream);
  } else if (kind == "vmm") {
    CUmemAllocationProp properties = device_properties(client.device);
    std::size_t granularity = 0;
    status = api.cuMemGetAllocationGranularity(&granularity, &properties,
                                               CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
    if (status != CUDA_SUCCESS) return status;
    held.bytes = (bytes + granularity - 1) / granularity * granularity;
    status = api.cuMemCreate(&held.handle, held.bytes, &properties, 0);
    if (status != CUDA_SUCCESS) return status;
    status = api.cuMemAddressReserve(&held.pointer, held.bytes, 0, 0, 0);
    if (status == CUDA_SUCCESS) status = api.cuMemMap(held.pointer, held.bytes, 0, held.handle, 0);
    CUmemAccessDesc access{};
    access.location = properties.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    if (status == CUDA_SUCCESS) status = api.cuMemSetAccess(held.pointer, held.bytes, &access, 1);
    if (status != CUDA_SUCCESS) {
      api.cuMemRelease(held.handle);
      return status;
    }
  } else if (kind == "host") {
    status = api.cuMemAllocHost_v2(&held.host, bytes);
    held.pointer = reinterpret_cast<CUdeviceptr>(held.host);
  } else {
    return CUDA_ERROR_INVALID_VALUE;
  }
  field(client, "kind", kind);
  field(client, "bytes", held.bytes);
  if (status == CUDA_SUCCESS) client.held.push_back(held);
  return status;
}

CUresult release(Client& client, const Held& held) {
  const Api& api = client.api;
  if (held.kind == "async" || held.kind == "pool")
    return api.cuMemFreeAsync(held.pointer, client.stream);
  if (held.kind == "host") return api.cuMemFreeHost(held.host);
  if (held.kind == "vmm") {
    CUresult status = api.cuMemUnmap(held.pointer, held.bytes);
    if (status == CUDA_SUCCESS) status = api.cuMemRelease(held.handle);
    if (status == CUDA_SUCCESS) status = api.cuMemAddressFree(held.pointer, held.bytes);
    return status;
  }
  return api.cuMemFree_v2(held.pointer);
}

// fill/check touch at most the first 16 MiB, so huge allocations stay cheap.
std::size_t pattern_bytes(const Held& held) {
  return held.bytes < (16u << 20) ? held.bytes : (16u << 20);
}

CUresult fill_or_check(Client& client, unsigned long long seed, bool check) {
  if (client.held.empty()) return CUDA_ERROR_INVALID_VALUE;
  const Held& held = client.held.back();
  std::vector<unsigned char> buffer(pattern_bytes(held));
  if (!check) {
    for (std::size_t i = 0; i < buffer.size(); ++i)
      buffer[i] = static_cast<unsigned char>(seed + i * 7);
    return client.api.cuMemcpyHtoD_v2(held.pointer, buffer.data(), buffer.size());
  }
  CUresult status = client.api.cuMemcpyDtoH_v2(buffer.data(), held.pointer, buffer.size());
  if (status != CUDA_SUCCESS) return status;
  for (std::size_t i = 0; i < buffer.size(); ++i) {
    if (buffer[i] != static_cast<unsigned char>(seed + i * 7)) {
      field(client, "mismatch_at", i);
      return CUDA_ERROR_UNKNOWN;
    }
  }
  field(client, "checked_bytes", buffer.size());
  return CUDA_SUCCESS;
}

}  // namespace

std::optional<bool> run_memory_step(Client& client, const std::vector<std::string>& args,
                                    CUresult* result) {
  const Api& api = client.api;
  const std::string& name = args[0];
  unsigned long long a = 0;
  auto number_arg = [&](std::size_t index, unsigned long long fallback, unsigned long long* out) {
    if (args.size() <= index) {
      *out = fallback;
      return true;
    }
    return parse_number(args[index], out);
  };
  if (name == "alloc") {
    std::size_t bytes = 0;
    if (args.size() != 3 || !parse_bytes(args[2], &bytes)) return false;
    auto start = std::chrono::steady_clock::now();
    *result = allocate(client, args[1], bytes);
    field_raw(client, "wall_ms", std::to_string(wall_ms_since(start)));

  } else if (name == "free" || name == "free-all") {
    auto start = std::chrono::steady_clock::now();
    *result = client.held.empty() ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    while (!client.held.empty() && *result == CUDA_SUCCESS) {
      *result = release(client, client.held.back());
      client.freed = client.held.back();
      client.held.pop_back();
      if (name == "free") break;
    }
    field_raw(client, "wall_ms", std::to_string(wall_ms_since(start)));

  } else if (name == "refree") {
    if (client.freed.kind.empty()) return false;
    *result = release(client, client.freed);

  } else if (name == "fill" || name == "check") {
    if (!number_arg(1, 1, &a)) return false;
    *result = fill_or_check(client, a, name == "check");

  } else if (name == "memset") {
    if (!number_arg(1, 0, &a) || client.held.empty()) return false;
    *result = api.cuMemsetD8_v2(client.held.back().pointer, static_cast<unsigned char>(a),
                                client.held.back().bytes);

  } else if (name == "advise" || name == "prefetch") {
    if (args.size() != 2 || client.held.empty()) return false;
    const Held& held = client.held.back();
    CUmemLocation location{};
    location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    location.id = client.device;
    CUmem_advise advice = CU_MEM_ADVISE_SET_PREFERRED_LOCATION;
    if (args[1] == "preferred-host" || args[1] == "host") {
      location.type = CU_MEM_LOCATION_TYPE_HOST;
      location.id = 0;
    } else if (args[1] == "accessed-by") {
      advice = CU_MEM_ADVISE_SET_ACCESSED_BY;
    } else if (args[1] != "preferred-device" && args[1] != "device") {
      return false;
    }
    *result = name == "advise"
                  ? api.cuMemAdvise_v2(held.pointer, held.bytes, advice, location)
                  : api.cuMemPrefetchAsync_v2(held.pointer, held.bytes, location, 0, client.stream);

  } else if (name == "copy" || name == "copies") {
    std::size_t bytes = 0;
    if (args.size() < 3 || client.held.empty() || !parse_bytes(args[2], &bytes)) return false;
    const Held& held = client.held.back();
    auto start = std::chrono::steady_clock::now();
    if (name == "copies") {
      if (!parse_number(args[1], &a)) return false;
      if (args.size() > 4 || (args.size() == 4 && args[3] != "async")) return false;
      *result = gpushare::clients::run_copies(api, client.stream, held.pointer, held.bytes, a,
                                              bytes, args.size() == 4);
    } else if (args.size() > 4 || (args.size() == 4 && args[3] != "async" && args[3] != "sync") ||
               !gpushare::clients::run_copy(api, client.stream, held.pointer, held.bytes, args[1],
                                            bytes, args.size() == 4 && args[3] == "async",
                                            result)) {
      return false;
    }
    field_raw(client, "wall_ms", std::to_string(wall_ms_since(start)));

  } else if (name == "managed-stats") {
    using Stats = int (*)(int, int, unsigned long long*, unsigned long long*);
    void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    auto stats = reinterpret_cast<Stats>(
        library != nullptr ? dlsym(library, "gpushare_sim_managed_stats") : nullptr);
    unsigned long long total = 0, resident = 0;
    *result = stats != nullptr ? static_cast<CUresult>(stats(client.device, 0, &total, &resident))
                               : CUDA_ERROR_NOT_SUPPORTED;
    field(client, "managed_bytes", total);
    field(client, "device_bytes", resident);
  } else {
    return std::nullopt;
  }
  return true;
}

}  // namespace gpushare::clients
