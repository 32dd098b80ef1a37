// The launch queue: see launch_queue.h. A ring of entries and a ring of
// argument bytes, both under one mutex; the launching threads add at the
// tail, the submitting thread takes from the head once it has submitted.
#include "interpose/compute/launch_queue.h"

#include <pthread.h>
#include <signal.h>

#include <cstring>

#include "interpose/compute/throttle.h"
#include "interpose/core/log.h"
#include "interpose/core/runtime.h"

namespace gpushare::interpose {

std::atomic<long> g_launch_queue_depth{0};

namespace {

constexpr long kQueueLaunches = 4096;
constexpr std::uint64_t kArenaBytes = 4u << 20;
/// CUDA's limit on a kernel's arguments is 32764 bytes.
constexpr std::uint32_t kQueueArgBytes = 32768;
constexpr std::uint32_t kMaxParams = 1024;

struct QueuedLaunch {
  CUfunction function;
  unsigned grid[3];
  unsigned block[3];
  unsigned shared_bytes;
  CUstream stream;
  CUcontext context;
  bool packed;               ///< the arguments are one packed buffer (extra)
  std::uint32_t params;      ///< kernelParams: how many
  std::uint32_t arg_bytes;   ///< bytes of arguments (after the offsets)
  std::uint64_t arena_at;    ///< where its bytes start (monotonic position)
  std::uint64_t arena_end;   ///< where they end, padding included
};

struct Queue {
  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t nonempty = PTHREAD_COND_INITIALIZER;
  pthread_cond_t progress = PTHREAD_COND_INITIALIZER;
  QueuedLaunch ring[kQueueLaunches];
  long head = 0, tail = 0;             // entries: [head, tail)
  std::uint64_t arena_head = 0, arena_tail = 0;  // argument bytes in use
  bool started = false;
  CUresult first_error = CUDA_SUCCESS;
  std::uint64_t queued = 0, refused = 0;
};
Queue g_queue;
alignas(16) unsigned char g_arena[kArenaBytes];
__thread bool t_submitting = false;

// Room for `bytes` contiguous bytes in the arena ring; the position to
// write at, or false when the ring is full (the caller waits).
bool arena_reserve(std::uint32_t bytes, std::uint64_t* at, std::uint64_t* end) {
  std::uint64_t start = g_queue.arena_tail;
  std::uint64_t offset = start % kArenaBytes;
  if (offset + bytes > kArenaBytes) start += kArenaBytes - offset;  // no wrap inside an entry
  std::uint64_t stop = start + ((bytes + 15) & ~std::uint64_t{15});
  if (stop - g_queue.arena_head > kArenaBytes) return false;
  *at = start;
  *end = stop;
  return true;
}

unsigned char* arena_at(std::uint64_t position) { return g_arena + position % kArenaBytes; }

// The arguments' layout: how many and where (into `offsets`, `sizes`), and
// their total span; false when they cannot be sized.
bool size_params(CUfunction function, std::uint32_t* count, std::size_t* offsets,
                 std::size_t* sizes, std::size_t* span) {
  const RealDriver& real = g_runtime.real;
  *count = 0;
  *span = 0;
  for (std::uint32_t i = 0; i < kMaxParams; ++i) {
    CUresult status = CUDA_ERROR_NOT_FOUND;
    if (real.real_cuFuncGetParamInfo != nullptr) {
      status = real.real_cuFuncGetParamInfo(function, i, &offsets[i], &sizes[i]);
    }
    if (status == CUDA_ERROR_INVALID_HANDLE && real.real_cuKernelGetParamInfo != nullptr) {
      // cudart launches CUkernel handles (context-independent loading).
      status = real.real_cuKernelGetParamInfo(reinterpret_cast<CUkernel>(function), i,
                                              &offsets[i], &sizes[i]);
    }
    if (status == CUDA_ERROR_INVALID_VALUE) return true;  // past the last argument
    if (status != CUDA_SUCCESS) return false;
    *count = i + 1;
    if (offsets[i] + sizes[i] > *span) *span = offsets[i] + sizes[i];
  }
  return false;  // more arguments than we queue
}

// A packed argument buffer from `extra`, or false where `extra` holds
// anything else.
bool packed_buffer(void** extra, const void** buffer, std::size_t* bytes) {
  *buffer = nullptr;
  *bytes = 0;
  bool sized = false;
  for (int i = 0; i < 16 && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
      *buffer = extra[i + 1];
    } else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1] != nullptr) {
      *bytes = *static_cast<const std::size_t*>(extra[i + 1]);
      sized = true;
    } else {
      return false;
    }
  }
  return *buffer != nullptr && sized;
}

void* submitter(void*) {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);  // the program's signals are not ours
  t_submitting = true;
  CUcontext current = nullptr;
  const RealDriver& real = g_runtime.real;
  void* params[kMaxParams];
  for (;;) {
    pthread_mutex_lock(&g_queue.mutex);
    while (g_queue.head == g_queue.tail) pthread_cond_wait(&g_queue.nonempty, &g_queue.mutex);
    // The entry and its bytes stay ours until head moves past it.
    QueuedLaunch item = g_queue.ring[g_queue.head % kQueueLaunches];
    pthread_mutex_unlock(&g_queue.mutex);
    if (item.context != current && real.real_cuCtxSetCurrent(item.context) == CUDA_SUCCESS) {
      current = item.context;
    }
    unsigned char* bytes = arena_at(item.arena_at);
    void** kernel_params = nullptr;
    void* extra[5] = {CU_LAUNCH_PARAM_END};
    std::size_t packed_bytes = item.arg_bytes;
    if (item.packed) {
      extra[0] = CU_LAUNCH_PARAM_BUFFER_POINTER;
      extra[1] = bytes;
      extra[2] = CU_LAUNCH_PARAM_BUFFER_SIZE;
      extra[3] = &packed_bytes;
      extra[4] = CU_LAUNCH_PARAM_END;
    } else if (item.params > 0) {
      const std::uint32_t* offsets = reinterpret_cast<const std::uint32_t*>(bytes);
      unsigned char* data = bytes + ((item.params * sizeof(std::uint32_t) + 15) & ~std::size_t{15});
      for (std::uint32_t i = 0; i < item.params; ++i) params[i] = data + offsets[i];
      kernel_params = params;
    }
    LaunchTicket ticket = throttle_gate(item.stream, false);
    CUresult result = real.real_cuLaunchKernel(
        item.function, item.grid[0], item.grid[1], item.grid[2], item.block[0], item.block[1],
        item.block[2], item.shared_bytes, item.stream, kernel_params,
        item.packed ? extra : nullptr);
    throttle_after(&ticket, result);
    pthread_mutex_lock(&g_queue.mutex);
    if (result != CUDA_SUCCESS && g_queue.first_error == CUDA_SUCCESS) {
      g_queue.first_error = result;
    }
    ++g_queue.head;
    g_queue.arena_head = g_queue.head == g_queue.tail
                             ? g_queue.arena_tail
                             : g_queue.ring[g_queue.head % kQueueLaunches].arena_at;
    g_launch_queue_depth.fetch_sub(1, std::memory_order_release);
    pthread_cond_broadcast(&g_queue.progress);
    pthread_mutex_unlock(&g_queue.mutex);
  }
  return nullptr;
}

// Starts the submitting thread; under the mutex.
bool ensure_started() {
  if (g_queue.started) return true;
  pthread_t thread;
  if (pthread_create(&thread, nullptr, submitter, nullptr) != 0) {
    GS_WARN("launch queue: cannot start its thread; launches are held as without it");
    return false;
  }
  pthread_detach(thread);
  g_queue.started = true;
  return true;
}

}  // namespace

bool launch_queue_push(CUfunction function, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                       unsigned block_x, unsigned block_y, unsigned block_z, unsigned shared_bytes,
                       CUstream stream, void** params, void** extra) {
  const RealDriver& real = g_runtime.real;
  QueuedLaunch item{};
  item.function = function;
  item.grid[0] = grid_x;
  item.grid[1] = grid_y;
  item.grid[2] = grid_z;
  item.block[0] = block_x;
  item.block[1] = block_y;
  item.block[2] = block_z;
  item.shared_bytes = shared_bytes;
  item.stream = stream;
  bool queueable = stream != CU_STREAM_PER_THREAD && real.real_cuCtxGetCurrent != nullptr &&
                   real.real_cuStreamIsCapturing != nullptr &&
                   real.real_cuCtxGetCurrent(&item.context) == CUDA_SUCCESS &&
                   item.context != nullptr;
  if (queueable) {
    // Work captured into a graph is not run: it must reach the capture now.
    CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
    queueable = real.real_cuStreamIsCapturing(stream, &capture) == CUDA_SUCCESS &&
                capture == CU_STREAM_CAPTURE_STATUS_NONE;
  }
  std::size_t offsets[kMaxParams], sizes[kMaxParams], span = 0;
  const void* packed = nullptr;
  std::size_t packed_bytes = 0;
  std::uint32_t count = 0;
  if (queueable && extra != nullptr) {
    queueable = params == nullptr && packed_buffer(extra, &packed, &packed_bytes) &&
                packed_bytes <= kQueueArgBytes;
    item.packed = true;
    item.arg_bytes = static_cast<std::uint32_t>(packed_bytes);
  } else if (queueable && params != nullptr) {
    queueable = size_params(function, &count, offsets, sizes, &span) && span <= kQueueArgBytes;
    item.params = count;
    item.arg_bytes = static_cast<std::uint32_t>(span);
  }
  std::uint32_t header = item.packed ? 0
                                     : static_cast<std::uint32_t>(
                                           (count * sizeof(std::uint32_t) + 15) & ~std::size_t{15});
  pthread_mutex_lock(&g_queue.mutex);
  if (!queueable || !ensure_started()) {
    ++g_queue.refused;
    pthread_mutex_unlock(&g_queue.mutex);
    return false;
  }
  while (g_queue.tail - g_queue.head >= kQueueLaunches ||
         !arena_reserve(header + item.arg_bytes, &item.arena_at, &item.arena_end)) {
    pthread_cond_wait(&g_queue.progress, &g_queue.mutex);  // full: wait for room
  }
  unsigned char* bytes = arena_at(item.arena_at);
  if (item.packed) {
    std::memcpy(bytes, packed, packed_bytes);
  } else {
    std::uint32_t* out_offsets = reinterpret_cast<std::uint32_t*>(bytes);
    for (std::uint32_t i = 0; i < count; ++i) {
      out_offsets[i] = static_cast<std::uint32_t>(offsets[i]);
      std::memcpy(bytes + header + offsets[i], params[i], sizes[i]);
    }
  }
  g_queue.arena_tail = item.arena_end;
  g_queue.ring[g_queue.tail % kQueueLaunches] = item;
  ++g_queue.tail;
  ++g_queue.queued;
  g_launch_queue_depth.fetch_add(1, std::memory_order_release);
  pthread_cond_signal(&g_queue.nonempty);
  pthread_mutex_unlock(&g_queue.mutex);
  return true;
}

CUresult launch_queue_drain() {
  if (t_submitting) return CUDA_SUCCESS;
  pthread_mutex_lock(&g_queue.mutex);
  while (g_queue.head != g_queue.tail) pthread_cond_wait(&g_queue.progress, &g_queue.mutex);
  CUresult error = g_queue.first_error;
  g_queue.first_error = CUDA_SUCCESS;
  pthread_mutex_unlock(&g_queue.mutex);
  return error;
}

std::uint64_t launch_queue_queued_total() {
  pthread_mutex_lock(&g_queue.mutex);
  std::uint64_t queued = g_queue.queued;
  pthread_mutex_unlock(&g_queue.mutex);
  return queued;
}

std::uint64_t launch_queue_refused_total() {
  pthread_mutex_lock(&g_queue.mutex);
  std::uint64_t refused = g_queue.refused;
  pthread_mutex_unlock(&g_queue.mutex);
  return refused;
}

void launch_queue_after_fork() {
  pthread_mutex_t fresh_mutex = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t fresh_cond = PTHREAD_COND_INITIALIZER;
  std::memcpy(&g_queue.mutex, &fresh_mutex, sizeof fresh_mutex);
  std::memcpy(&g_queue.nonempty, &fresh_cond, sizeof fresh_cond);
  std::memcpy(&g_queue.progress, &fresh_cond, sizeof fresh_cond);
  // The parent's queued launches are the parent's: the child starts empty.
  g_queue.head = g_queue.tail = 0;
  g_queue.arena_head = g_queue.arena_tail = 0;
  g_queue.started = false;
  g_queue.first_error = CUDA_SUCCESS;
  g_launch_queue_depth.store(0, std::memory_order_relaxed);
  t_submitting = false;
}

}  // namespace gpushare::interpose
