// gpushare-cuda-client's state and the helpers its step files share
// (cuda_client.cc: the program and most steps; memory_steps.cc: allocating,
// freeing, filling, checking, advising and copying memory).
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "client_api.h"

namespace gpushare::clients {

struct Held {
  std::string kind;
  CUdeviceptr pointer = 0;
  std::size_t bytes = 0;
  CUmemGenericAllocationHandle handle = 0;
  void* host = nullptr;
};

enum class LaunchMode { kPlain, kEx, kCooperative };

struct Client {
  Api api{};
  CUfunction function = nullptr;  ///< what launch, timed and events run
  LaunchMode mode = LaunchMode::kPlain;
  CUdevice device = 0;
  CUcontext created = nullptr;
  CUstream stream = nullptr;
  CUmodule module = nullptr;
  CUfunction spin = nullptr;
  CUmemoryPool pool = nullptr;
  CUevent mark = nullptr;  ///< the mark step's event
  std::vector<Held> held;
  Held freed;        ///< the last allocation freed, for refree
  std::string json;  ///< extra fields of the current step's line
};

void field(Client& client, const char* name, unsigned long long value);
void field(Client& client, const char* name, const std::string& value);
void field_raw(Client& client, const char* name, const std::string& raw);
bool parse_number(const std::string& text, unsigned long long* value);
/// A size as gpushare writes it ("16MiB").
bool parse_bytes(const std::string& text, std::size_t* bytes);
double wall_ms_since(std::chrono::steady_clock::time_point start);

/// The memory steps (alloc, free, free-all, refree, fill, check, memset,
/// advise, prefetch, copy, copies, managed-stats): nullopt for any other
/// step; else whether the step was well-formed, its status in *result.
std::optional<bool> run_memory_step(Client& client, const std::vector<std::string>& args,
                                    CUresult* result);

}  // namespace gpushare::clients
