// The workload's run loop.
//
// Data check: before the first iteration the workload writes a
// pseudo-random pattern into blocks of 64 KiB spread evenly over its
// working set (--verify bytes of them in all), through a pinned staging
// buffer, and keeps an FNV-1a checksum of what it wrote. After the last
// iteration it reads every block back and compares: memory that moved
// (a spill to the host and back) or was reallocated under the program's
// feet shows up as a mismatch at a named offset. --verify-every N runs the
// same check after every N iterations too (the stress tests check data
// after each spill and restore this way).
#include "workload.h"

#include <cuda.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "common/clock.h"
#include "kernels/spin_ptx.h"

namespace gpushare::workload {
namespace {

constexpr std::uint64_t kBlockBytes = 64 << 10;
constexpr std::uint64_t kGrowTouchBytes = 1 << 20;
// A launch that takes longer than this blocked (a gate held it, or the
// launch queue was full): a launch costs the simulated driver a few
// microseconds, and a loaded machine's scheduling delays are below it.
constexpr std::int64_t kBlockedLaunchNs = 100'000;

std::int64_t monotonic_ns() { return static_cast<std::int64_t>(gpushare::monotonic_ns()); }

std::string cuda_error_name(CUresult result) {
  const char* name = nullptr;
  if (cuGetErrorName(result, &name) == CUDA_SUCCESS && name != nullptr) return name;
  return "CUresult " + std::to_string(static_cast<int>(result));
}

// "CALL: CUDA_ERROR_X" for a failed call, or nothing.
Status check(CUresult result, const std::string& call) {
  if (result == CUDA_SUCCESS) return {};
  return make_error(call + ": " + cuda_error_name(result));
}

#define WORKLOAD_TRY(expression)                                         \
  do {                                                                   \
    if (Status status_ = (expression); !status_) return status_.error(); \
  } while (0)

std::string bytes_call(const char* name, std::uint64_t bytes) {
  return std::string(name) + "(" + std::to_string(bytes) + " bytes)";
}

// The pattern of the block at `offset`: xorshift64 seeded by the offset.
void fill_pattern(std::uint64_t offset, unsigned char* data, std::size_t bytes) {
  std::uint64_t state = offset * 0x9e3779b97f4a7c15ull + 0x2545f4914f6cdd1dull;
  for (std::size_t i = 0; i < bytes; i += 8) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    std::memcpy(data + i, &state, std::min<std::size_t>(8, bytes - i));
  }
}

std::uint64_t fnv1a(std::uint64_t hash, const unsigned char* data, std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; ++i) {
    hash ^= data[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

// The simulated GPU's collective (simgpu/collective.h) in its own module
// format, which a real driver refuses: a multi-process job needs NCCL there.
// Named as NCCL 2.19 and later names its all-reduce kernels (the simulated
// driver's collective, simgpu/collective.h), so that the interposer tells
// it from other kernels as it tells NCCL's.
#define GPUSHARE_ALLREDUCE_KERNEL "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
constexpr char kAllreduceModule[] =
    "gpushare-sim-module 1\nkernel " GPUSHARE_ALLREDUCE_KERNEL " 0\n";
constexpr char kAllreduceKernelName[] = GPUSHARE_ALLREDUCE_KERNEL;
#undef GPUSHARE_ALLREDUCE_KERNEL

struct Device {
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;
  CUfunction spin = nullptr;
  CUfunction allreduce = nullptr;
  CUevent start = nullptr;
  CUevent end = nullptr;
  void* staging = nullptr;
};

Status open_device(const WorkloadOptions& options, Device* device) {
  WORKLOAD_TRY(check(cuInit(0), "cuInit"));
  CUdevice handle = 0;
  WORKLOAD_TRY(check(cuDeviceGet(&handle, options.device),
                     "cuDeviceGet(" + std::to_string(options.device) + ")"));
  WORKLOAD_TRY(check(cuDevicePrimaryCtxRetain(&device->ctx, handle), "cuDevicePrimaryCtxRetain"));
  WORKLOAD_TRY(check(cuCtxSetCurrent(device->ctx), "cuCtxSetCurrent"));
  CUmodule module = nullptr;
  WORKLOAD_TRY(check(cuModuleLoadData(&module, kernels::kSpinPtx), "cuModuleLoadData"));
  WORKLOAD_TRY(check(cuModuleGetFunction(&device->spin, module, kernels::kSpinKernelName),
                     std::string("cuModuleGetFunction(") + kernels::kSpinKernelName + ")"));
  if (options.allreduce_bytes > 0) {
    CUmodule collectives = nullptr;
    CUresult loaded = cuModuleLoadData(&collectives, kAllreduceModule);
    if (loaded != CUDA_SUCCESS) {
      return make_error(std::string("cuModuleLoadData(") + kAllreduceKernelName + "): " +
                        cuda_error_name(loaded) +
                        " (the all-reduce is the simulated GPU's stand-in for NCCL's: a real "
                        "GPU's job needs NCCL)");
    }
    WORKLOAD_TRY(check(cuModuleGetFunction(&device->allreduce, collectives, kAllreduceKernelName),
                       std::string("cuModuleGetFunction(") + kAllreduceKernelName + ")"));
  }
  WORKLOAD_TRY(check(cuStreamCreate(&device->stream, CU_STREAM_DEFAULT), "cuStreamCreate"));
  WORKLOAD_TRY(check(cuEventCreate(&device->start, CU_EVENT_DEFAULT), "cuEventCreate"));
  WORKLOAD_TRY(check(cuEventCreate(&device->end, CU_EVENT_DEFAULT), "cuEventCreate"));
  WORKLOAD_TRY(check(cuMemAllocHost(&device->staging, kBlockBytes),
                     bytes_call("cuMemAllocHost_v2", kBlockBytes)));
  return {};
}

Result<CUdeviceptr> allocate(AllocKind kind, std::uint64_t bytes, CUstream stream) {
  CUdeviceptr pointer = 0;
  switch (kind) {
    case AllocKind::kPlain:
      WORKLOAD_TRY(check(cuMemAlloc(&pointer, bytes), bytes_call("cuMemAlloc_v2", bytes)));
      break;
    case AllocKind::kManaged:
      WORKLOAD_TRY(check(cuMemAllocManaged(&pointer, bytes, CU_MEM_ATTACH_GLOBAL),
                         bytes_call("cuMemAllocManaged", bytes)));
      break;
    case AllocKind::kAsync:
      WORKLOAD_TRY(
          check(cuMemAllocAsync(&pointer, bytes, stream), bytes_call("cuMemAllocAsync", bytes)));
      break;
  }
  return pointer;
}

Status release(AllocKind kind, CUdeviceptr pointer, CUstream stream) {
  if (kind == AllocKind::kAsync) return check(cuMemFreeAsync(pointer, stream), "cuMemFreeAsync");
  return check(cuMemFree(pointer), "cuMemFree_v2");
}

// Offsets of the verified blocks: evenly spread, block-aligned.
std::vector<std::uint64_t> block_offsets(std::uint64_t mem_bytes, std::uint64_t verify_bytes,
                                         std::uint64_t* block_bytes) {
  *block_bytes = std::min(kBlockBytes, mem_bytes);
  std::uint64_t blocks =
      std::max<std::uint64_t>(1, std::min(verify_bytes, mem_bytes) / *block_bytes);
  std::uint64_t stride = mem_bytes / blocks;
  std::vector<std::uint64_t> offsets;
  for (std::uint64_t i = 0; i < blocks; ++i) {
    std::uint64_t offset = i * stride / 256 * 256;
    if (offset + *block_bytes > mem_bytes) offset = mem_bytes - *block_bytes;
    offsets.push_back(offset);
  }
  return offsets;
}

// `seed` is the chunk's offset in the whole working set, so that chunks
// mixed up show as mismatches.
Status write_pattern(const Device& device, CUdeviceptr base, std::uint64_t seed,
                     const std::vector<std::uint64_t>& offsets, std::uint64_t block_bytes,
                     std::uint64_t* checksum) {
  auto* staging = static_cast<unsigned char*>(device.staging);
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (std::uint64_t offset : offsets) {
    fill_pattern(seed + offset, staging, block_bytes);
    hash = fnv1a(hash, staging, block_bytes);
    WORKLOAD_TRY(check(cuMemcpyHtoD(base + offset, staging, block_bytes),
                       bytes_call("cuMemcpyHtoD_v2", block_bytes)));
  }
  *checksum = hash;
  return {};
}

Status verify_pattern(const Device& device, CUdeviceptr base, std::uint64_t seed,
                      const std::vector<std::uint64_t>& offsets, std::uint64_t block_bytes,
                      std::uint64_t checksum) {
  auto* staging = static_cast<unsigned char*>(device.staging);
  std::vector<unsigned char> expected(block_bytes);
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (std::uint64_t offset : offsets) {
    WORKLOAD_TRY(check(cuMemcpyDtoH(staging, base + offset, block_bytes),
                       bytes_call("cuMemcpyDtoH_v2", block_bytes)));
    fill_pattern(seed + offset, expected.data(), block_bytes);
    for (std::uint64_t i = 0; i < block_bytes; ++i) {
      if (staging[i] != expected[i]) {
        return make_error("checksum mismatch: the working set changed at offset " +
                          std::to_string(seed + offset + i));
      }
    }
    hash = fnv1a(hash, staging, block_bytes);
  }
  if (hash != checksum) return make_error("checksum mismatch over the verified blocks");
  return {};
}

// The working set: --chunks equal allocations (the last takes the
// remainder), each with its own verified blocks and checksum.
struct WorkingSet {
  std::vector<CUdeviceptr> chunks;
  std::vector<std::uint64_t> chunk_bytes;
  std::vector<std::vector<std::uint64_t>> offsets;
  std::vector<std::uint64_t> block_bytes;
  std::vector<std::uint64_t> checksums;
};

Status allocate_working_set(const WorkloadOptions& options, CUstream stream, WorkingSet* set) {
  std::uint64_t count =
      std::max<std::uint64_t>(1, std::min<std::uint64_t>(options.chunks, options.mem_bytes));
  std::uint64_t each = options.mem_bytes / count;
  for (std::uint64_t i = 0; i < count; ++i) {
    std::uint64_t bytes = i + 1 < count ? each : options.mem_bytes - each * (count - 1);
    Result<CUdeviceptr> chunk = allocate(options.alloc, bytes, stream);
    if (!chunk) return chunk.error();
    set->chunks.push_back(*chunk);
    set->chunk_bytes.push_back(bytes);
    std::uint64_t block_bytes = 0;
    set->offsets.push_back(block_offsets(bytes, options.verify_bytes / count, &block_bytes));
    set->block_bytes.push_back(block_bytes);
  }
  return {};
}

// Writes every chunk's pattern; the checksum of the whole is the chunks'
// folded (the chunk's own for one chunk).
Status write_working_set(const Device& device, WorkingSet* set, std::uint64_t* checksum,
                         std::uint64_t* verified_bytes) {
  std::uint64_t seed = 0;
  *verified_bytes = 0;
  for (std::size_t i = 0; i < set->chunks.size(); ++i) {
    std::uint64_t sum = 0;
    WORKLOAD_TRY(
        write_pattern(device, set->chunks[i], seed, set->offsets[i], set->block_bytes[i], &sum));
    set->checksums.push_back(sum);
    *checksum = i == 0 ? sum : (*checksum ^ sum) * 0x100000001b3ull;
    *verified_bytes += set->offsets[i].size() * set->block_bytes[i];
    seed += set->chunk_bytes[i];
  }
  return {};
}

Status verify_working_set(const Device& device, const WorkingSet& set) {
  std::uint64_t seed = 0;
  for (std::size_t i = 0; i < set.chunks.size(); ++i) {
    WORKLOAD_TRY(verify_pattern(device, set.chunks[i], seed, set.offsets[i], set.block_bytes[i],
                                set.checksums[i]));
    seed += set.chunk_bytes[i];
  }
  return {};
}

double ms_between(std::chrono::steady_clock::time_point from,
                  std::chrono::steady_clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

// One step of a trace: each kernel at its (scaled) offset from the step's
// start, on an absolute clock so that lateness does not accumulate; a job
// behind its schedule launches at once. Returns the kernels launched.
Result<long> replay_step(const Device& device, const WorkloadOptions& options,
                         const TraceStep& step) {
  timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  std::int64_t start_ns = static_cast<std::int64_t>(start.tv_sec) * 1000000000 + start.tv_nsec;
  long launched = 0;
  for (const TraceKernel& kernel : step.kernels) {
    std::int64_t due_ns =
        start_ns + static_cast<std::int64_t>(kernel.launch_offset_us * options.launch_scale * 1000);
    std::int64_t before_ns = monotonic_ns();
    if (before_ns < due_ns) {
      timespec due{static_cast<time_t>(due_ns / 1000000000), static_cast<long>(due_ns % 1000000000)};
      clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &due, nullptr);
      before_ns = monotonic_ns();
    }
    unsigned long long kernel_ns = static_cast<unsigned long long>(kernel.kernel_us * 1000 + 0.5);
    void* params[] = {&kernel_ns};
    WORKLOAD_TRY(check(cuLaunchKernel(device.spin, options.blocks, 1, 1, 1, 1, 1, 0, device.stream,
                                      params, nullptr),
                       "cuLaunchKernel(gpushare_spin, " + std::to_string(kernel.kernel_us) +
                           " us)"));
    ++launched;
    // Host-paced: a launch that blocked moves the rest of the step's
    // schedule by the time it took. Only a block counts (a launch longer
    // than kBlockedLaunchNs), so that the schedule stays absolute
    // otherwise and a sleep's lateness does not add up over a step's
    // hundreds of launches.
    if (options.host_paced) {
      std::int64_t took_ns = monotonic_ns() - before_ns;
      if (took_ns > kBlockedLaunchNs) start_ns += took_ns;
    }
  }
  return launched;
}

// A step's kernels from `first` to `last` (not included): the trace's
// step's, or spin kernels of kernel_us.
Status launch_part(const Device& device, const WorkloadOptions& options, long iteration,
                   std::size_t first, std::size_t last) {
  if (options.trace != nullptr) {
    const std::vector<TraceStep>& steps = options.trace->steps;
    TraceStep part;
    const TraceStep& step = steps[static_cast<std::size_t>(iteration) % steps.size()];
    part.kernels.assign(step.kernels.begin() + static_cast<std::ptrdiff_t>(first),
                        step.kernels.begin() + static_cast<std::ptrdiff_t>(last));
    Result<long> replayed = replay_step(device, options, part);
    if (!replayed) return replayed.error();
    return {};
  }
  unsigned long long kernel_ns = static_cast<unsigned long long>(options.kernel_us) * 1000;
  void* params[] = {&kernel_ns};
  for (std::size_t k = first; k < last; ++k) {
    WORKLOAD_TRY(check(cuLaunchKernel(device.spin, options.blocks, 1, 1, 1, 1, 1, 0, device.stream,
                                      params, nullptr),
                       "cuLaunchKernel(gpushare_spin, " + std::to_string(options.kernel_us) +
                           " us)"));
  }
  return {};
}

// The start-up steps (WorkloadOptions::startup_steps): what a framework's
// first steps do to the GPU's admission, as a PyTorch job started beside a
// busy one pauses inside its bursts and synchronises often.
Status run_startup(const Device& device, const WorkloadOptions& options) {
  for (long s = 0; s < options.startup_steps; ++s) {
    std::size_t kernels =
        options.trace != nullptr
            ? options.trace->steps[static_cast<std::size_t>(s) % options.trace->steps.size()]
                  .kernels.size()
            : static_cast<std::size_t>(options.kernels_per_iteration);
    WORKLOAD_TRY(launch_part(device, options, s, 0, kernels / 2));
    std::this_thread::sleep_for(std::chrono::microseconds(options.startup_pause_us));
    WORKLOAD_TRY(launch_part(device, options, s, kernels / 2, kernels));
    WORKLOAD_TRY(check(cuStreamSynchronize(device.stream), "cuStreamSynchronize"));
  }
  return {};
}

}  // namespace

Result<WorkloadResult> run_workload(const WorkloadOptions& options,
                                    const IterationCallback& on_iteration) {
  Device device;
  WORKLOAD_TRY(open_device(options, &device));
  WorkloadResult result;

  WorkingSet working_set;
  WORKLOAD_TRY(allocate_working_set(options, device.stream, &working_set));
  result.peak_mem_bytes = options.mem_bytes;
  WORKLOAD_TRY(check(cuStreamSynchronize(device.stream), "cuStreamSynchronize"));
  WORKLOAD_TRY(write_working_set(device, &working_set, &result.checksum, &result.verified_bytes));

  unsigned long long kernel_ns = static_cast<unsigned long long>(options.kernel_us) * 1000;
  void* params[] = {&kernel_ns};
  // A replayed trace keeps microsecond launch offsets: the default timer
  // slack (50 us) would stretch every short wait.
  if (options.trace != nullptr) prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  auto startup_start = std::chrono::steady_clock::now();
  WORKLOAD_TRY(run_startup(device, options));
  auto run_start = std::chrono::steady_clock::now();
  result.startup_ms = ms_between(startup_start, run_start);
  auto deadline = run_start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                  std::chrono::duration<double>(options.duration_s));
  auto more = [&](long iteration) {
    if (!options.stop_file.empty() && access(options.stop_file.c_str(), F_OK) == 0) return false;
    return options.duration_s > 0 ? std::chrono::steady_clock::now() < deadline
                                  : iteration < options.iterations;
  };
  // The synchronisation pattern in force and how many iterations of its
  // group have run (the group's first records the start event).
  long sync_every = options.sync_every.empty() ? 1 : options.sync_every.front();
  long in_group = 0;
  for (long iteration = 0; more(iteration); ++iteration) {
    auto start = std::chrono::steady_clock::now();
    if (in_group == 0 && options.sync_every.size() > 1 && options.sync_switch_s > 0) {
      auto phase = static_cast<std::size_t>(ms_between(run_start, start) / 1000 /
                                            options.sync_switch_s);
      sync_every = options.sync_every[phase % options.sync_every.size()];
    }
    // The host's share of an iteration: the GPU has nothing of this job's
    // to run meanwhile, as while a real job loads its next batch.
    if (options.host_us > 0)
      std::this_thread::sleep_for(std::chrono::microseconds(options.host_us));
    std::uint64_t mem_bytes = options.mem_bytes;
    CUdeviceptr grown = 0;
    if (in_group == 0)
      WORKLOAD_TRY(check(cuEventRecord(device.start, device.stream), "cuEventRecord"));
    if (options.grow_bytes > 0) {
      // Activations: allocated, touched and freed within the iteration.
      Result<CUdeviceptr> extra = allocate(options.alloc, options.grow_bytes, device.stream);
      if (!extra) return extra.error();
      grown = *extra;
      mem_bytes += options.grow_bytes;
      std::uint64_t touch = std::min(options.grow_bytes, kGrowTouchBytes);
      WORKLOAD_TRY(
          check(cuMemsetD8Async(grown, static_cast<unsigned char>(iteration), touch, device.stream),
                bytes_call("cuMemsetD8Async", touch)));
    }
    long kernels = options.kernels_per_iteration;
    if (options.trace != nullptr) {
      const std::vector<TraceStep>& steps = options.trace->steps;
      Result<long> replayed = replay_step(
          device, options, steps[static_cast<std::size_t>(iteration) % steps.size()]);
      if (!replayed) return replayed.error();
      kernels = *replayed;
    } else {
      for (long k = 0; k < kernels; ++k) {
        WORKLOAD_TRY(check(cuLaunchKernel(device.spin, options.blocks, 1, 1, 1, 1, 1, 0,
                                          device.stream, params, nullptr),
                           "cuLaunchKernel(gpushare_spin, " + std::to_string(options.kernel_us) +
                               " us)"));
      }
    }
    // The gradients' all-reduce, after the step's kernels, as DDP's last
    // bucket is reduced once the backward pass ends.
    std::chrono::steady_clock::time_point allreduce_at{};
    if (device.allreduce != nullptr) {
      unsigned long long bytes = options.allreduce_bytes;
      unsigned long long comm = options.comm;
      unsigned rank = static_cast<unsigned>(options.rank < 0 ? 0 : options.rank);
      unsigned world = static_cast<unsigned>(options.world_size);
      void* collective_params[] = {&bytes, &comm, &rank, &world};
      allreduce_at = std::chrono::steady_clock::now();
      WORKLOAD_TRY(check(cuLaunchKernel(device.allreduce, 1, 1, 1, 1, 1, 1, 0, device.stream,
                                        collective_params, nullptr),
                         std::string("cuLaunchKernel(") + kAllreduceKernelName + ", " +
                             std::to_string(bytes) + " bytes)"));
      ++result.allreduces;
    }
    if (grown != 0) WORKLOAD_TRY(release(options.alloc, grown, device.stream));
    bool synced = ++in_group >= sync_every;
    float gpu_ms = 0;
    if (synced) {
      WORKLOAD_TRY(check(cuEventRecord(device.end, device.stream), "cuEventRecord"));
      WORKLOAD_TRY(check(cuStreamSynchronize(device.stream), "cuStreamSynchronize"));
      WORKLOAD_TRY(
          check(cuEventElapsedTime(&gpu_ms, device.start, device.end), "cuEventElapsedTime"));
      in_group = 0;
    }
    auto end = std::chrono::steady_clock::now();
    double iteration_ms = ms_between(start, end);
    double allreduce_wait_ms =
        device.allreduce != nullptr && synced ? ms_between(allreduce_at, end) : 0;
    // steady_clock is CLOCK_MONOTONIC on Linux (libstdc++): comparable
    // between processes on one machine.
    double t_ms = std::chrono::duration<double, std::milli>(end.time_since_epoch()).count();
    result.iteration_ms.push_back(iteration_ms);
    result.gpu_ms_total += gpu_ms;
    result.kernels += kernels;
    result.peak_mem_bytes = std::max(result.peak_mem_bytes, mem_bytes);
    if (on_iteration)
      on_iteration(
          {iteration, iteration_ms, t_ms, gpu_ms, mem_bytes, sync_every, synced, allreduce_wait_ms});
    if (options.verify_every > 0 && (iteration + 1) % options.verify_every == 0) {
      WORKLOAD_TRY(verify_working_set(device, working_set));
      ++result.verifications;
    }
  }
  if (in_group > 0)  // the last group's kernels belong to the run's time
    WORKLOAD_TRY(check(cuStreamSynchronize(device.stream), "cuStreamSynchronize"));
  result.elapsed_ms = ms_between(run_start, std::chrono::steady_clock::now());

  WORKLOAD_TRY(verify_working_set(device, working_set));
  ++result.verifications;
  for (CUdeviceptr chunk : working_set.chunks)
    WORKLOAD_TRY(release(options.alloc, chunk, device.stream));
  WORKLOAD_TRY(check(cuStreamSynchronize(device.stream), "cuStreamSynchronize"));
  return result;
}

std::uint64_t comm_of(const std::string& rendezvous) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (char c : rendezvous) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ull;
  }
  return hash != 0 ? hash : 1;
}

Summary summarise(const WorkloadResult& result) {
  Summary summary{0, 0, 0};
  if (result.iteration_ms.empty()) return summary;
  double total = 0;
  for (double ms : result.iteration_ms) total += ms;
  summary.iteration_ms_mean = total / static_cast<double>(result.iteration_ms.size());
  std::vector<double> sorted = result.iteration_ms;
  std::sort(sorted.begin(), sorted.end());
  // Nearest rank: the smallest value with at least 99% of samples at or below it.
  std::size_t rank = (sorted.size() * 99 + 99) / 100;
  summary.iteration_ms_p99 = sorted[std::min(sorted.size(), std::max<std::size_t>(rank, 1)) - 1];
  summary.iterations_per_s =
      result.elapsed_ms > 0 ? static_cast<double>(sorted.size()) * 1000.0 / result.elapsed_ms : 0;
  return summary;
}

}  // namespace gpushare::workload
