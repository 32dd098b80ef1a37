// The simulated driver's process-local state, shared by its translation
// units. Nothing here is visible outside libcuda.so.1.
//
// Threading: one process-local mutex (Driver::mutex) guards every object
// below; the state file's own lock is taken inside it, never the other way
// round, and neither is held while sleeping.
//
// Handles: contexts, streams, events, modules, functions, pools and VMM
// handles are objects in chunked pools that are never returned to malloc,
// so a stale or foreign handle can be checked (does it point into a pool,
// at an object boundary, with a live magic number?) instead of crashing.
#pragma once

// Declares every ABI variant under its own name (cuMemAlloc_v2,
// cuMemcpyHtoD_v2_ptds, ...) instead of mapping the plain names onto the
// newest one, as the driver itself must.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <pthread.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "simgpu/config.h"
#include "simgpu/module_image.h"
#include "simgpu/state.h"

#define SIM_EXPORT extern "C" __attribute__((visibility("default")))

namespace gpushare::simgpu::driver {

// ---------------------------------------------------------------- objects

template <class T>
class ObjectPool {
 public:
  /// A zeroed object (its generation kept), or nullptr when out of memory.
  T* acquire();
  /// Marks the object dead and keeps it for reuse.
  void release(T* object);
  /// True when `pointer` is the address of one of this pool's objects.
  bool owns(const void* pointer) const;
  /// Calls f(T*) for every object, live or dead.
  template <class F>
  void for_each(F f) {
    for (Chunk* chunk = chunks_; chunk != nullptr; chunk = chunk->next) {
      for (T& object : chunk->objects) f(&object);
    }
  }

 private:
  static constexpr int kChunkObjects = 32;
  struct Chunk {
    Chunk* next;
    T objects[kChunkObjects];
  };
  Chunk* chunks_ = nullptr;
  T* free_ = nullptr;
};

inline constexpr std::uint32_t kContextMagic = 0x53494d43;  // "SIMC"
inline constexpr std::uint32_t kStreamMagic = 0x53494d53;
inline constexpr std::uint32_t kEventMagic = 0x53494d45;
inline constexpr std::uint32_t kModuleMagic = 0x53494d4d;
inline constexpr std::uint32_t kFunctionMagic = 0x53494d46;
inline constexpr std::uint32_t kPoolMagic = 0x53494d50;
inline constexpr std::uint32_t kVmmMagic = 0x53494d56;
inline constexpr std::uint32_t kArrayMagic = 0x53494d41;

struct Stream;

/// When some work is done: once kernel `seq` of this process on the
/// device's scheduler model has finished (0: no kernel) and the clock has
/// passed floor_ns (work off the model's timeline, such as a managed-memory
/// migration). Kernels of one process on a device finish in launch order,
/// so the later of two marks is their element-wise maximum.
struct Ready {
  std::uint64_t seq;
  std::int64_t floor_ns;
};

struct Context {
  std::uint32_t magic;
  std::uint32_t generation;
  Context* next_free;
  int device;
  unsigned flags;
  std::uint32_t serial;  ///< unique per process; names the context in the state file
  bool primary;
  int primary_refs;  ///< retains of a primary context
  bool overhead_charged;
  Stream* legacy;        ///< the NULL / CU_STREAM_LEGACY stream
  Ready all_ready;       ///< when all work of any stream completes
  Ready blocking_ready;  ///< ... of blocking streams other than legacy
  std::uint64_t managed_generation_seen;
  std::uint64_t managed_total_bytes;
  std::uint64_t managed_host_bytes;
  std::size_t limits[16];  ///< cuCtxSetLimit values, by CUlimit
};

enum class StreamKind { kUser, kLegacy, kPerThread };

struct Stream {
  std::uint32_t magic;
  std::uint32_t generation;
  Stream* next_free;
  Context* ctx;
  StreamKind kind;
  unsigned flags;  ///< CU_STREAM_NON_BLOCKING or CU_STREAM_DEFAULT
  int priority;
  std::uint64_t id;
  Ready ready;             ///< completion of its last work
  std::uint64_t* pending;  ///< recent kernels (back-pressure ring)
  std::uint32_t pending_next;
};

struct Event {
  std::uint32_t magic;
  std::uint32_t generation;
  Event* next_free;
  Context* ctx;
  unsigned flags;
  bool recorded;
  int device;  ///< of the stream it was recorded on
  Ready mark;  ///< the work it waits for
};

struct Function;

struct Module {
  std::uint32_t magic;
  std::uint32_t generation;
  Module* next_free;
  Context* ctx;  ///< nullptr for a library (context-independent)
  bool library;
  ModuleImage image;
  Function* functions;  ///< handed out so far, linked by next_in_module
};

struct Function {
  std::uint32_t magic;
  std::uint32_t generation;
  Function* next_free;
  Module* module;
  Function* next_in_module;
  KernelInfo kernel;
  int max_dynamic_shared_bytes;
};

struct MemPool {
  std::uint32_t magic;
  std::uint32_t generation;
  MemPool* next_free;
  int device;
  bool is_default;
  std::uint64_t used_bytes;    ///< live allocations
  std::uint64_t cached_bytes;  ///< freed but still reserved (and charged)
  std::uint64_t used_high;
  std::uint64_t reserved_high;
  std::uint64_t release_threshold;
  int reuse[3];  ///< the three CU_MEMPOOL_ATTR_REUSE_* flags
};

struct VmmHandle {
  std::uint32_t magic;
  std::uint32_t generation;
  VmmHandle* next_free;
  int device;
  std::uint64_t size_bytes;
  int memfd;
  int references;  ///< cuMemCreate and cuMemRetainAllocationHandle, less cuMemRelease
  int mappings;
};

/// A CUDA array: charged to its device, holding no addressable bytes (the
/// simulator copies nothing into arrays).
struct ArrayObject {
  std::uint32_t magic;
  std::uint32_t generation;
  ArrayObject* next_free;
  Context* ctx;
  int device;
  std::uint64_t bytes;
  CUDA_ARRAY3D_DESCRIPTOR descriptor;
};

// --------------------------------------------------------- memory registry

enum class AllocKind : std::uint8_t {
  kDevice,          ///< cuMemAlloc, cuMemAllocPitch
  kAsync,           ///< cuMemAllocAsync, cuMemAllocFromPoolAsync
  kManaged,         ///< cuMemAllocManaged
  kHost,            ///< cuMemAllocHost, cuMemHostAlloc
  kHostRegistered,  ///< cuMemHostRegister
  kVmmMapping,      ///< cuMemMap
};

struct Allocation {
  std::uintptr_t base;
  std::size_t size;
  std::size_t mapped_bytes;  ///< length of our own mmap (0 if not ours)
  AllocKind kind;
  bool accessible;  ///< VMM: cuMemSetAccess granted read-write
  Context* ctx;
  int device;
  std::uint64_t charged_bytes;
  MemPool* pool;
  int managed_index;
  std::uint64_t managed_id;
  VmmHandle* vmm;
  unsigned host_flags;
};

struct Reservation {
  std::uintptr_t base;
  std::size_t size;
};

// ------------------------------------------------------------ the driver

struct Driver {
  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  int init_state = 0;  ///< 0 not yet, 1 ready, 2 failed (atomic)
  int forked = 0;      ///< set in a child after fork(): the driver is unusable there
  CUresult init_error = CUDA_SUCCESS;
  char init_message[kMessageBytes] = {};
  SimConfig config = {};
  StateFile state;
  int slot = -1;
  std::int32_t pid = 0;
  int device_count = 0;                ///< visible devices (CUDA_VISIBLE_DEVICES)
  int visible[kMaxDevices] = {};       ///< CUdevice ordinal -> device in the state file
  Context* primary[kMaxDevices] = {};  ///< by device in the state file
  MemPool* default_pool[kMaxDevices] = {};
  MemPool* current_pool[kMaxDevices] = {};
  std::uint32_t next_serial = 0;
  std::uint64_t next_id = 0;

  ObjectPool<Context> contexts;
  ObjectPool<Stream> streams;
  ObjectPool<Event> events;
  ObjectPool<Module> modules;
  ObjectPool<Function> functions;
  ObjectPool<MemPool> pools;
  ObjectPool<VmmHandle> vmm_handles;
  ObjectPool<ArrayObject> arrays;

  Allocation* allocations = nullptr;  ///< sorted by base, non-overlapping
  std::size_t allocation_count = 0;
  std::size_t allocation_capacity = 0;
  Reservation* reservations = nullptr;
  std::size_t reservation_count = 0;
  std::size_t reservation_capacity = 0;
};

Driver& sim();

/// CUDA_SUCCESS once cuInit succeeded in this process; else NOT_INITIALIZED.
CUresult enter();

// Device numbers: API calls take and return CUdevice ordinals of the
// devices CUDA_VISIBLE_DEVICES shows; contexts, pools and the state file use
// the device's index in the state file ("physical").
/// enter(), then the physical device of an ordinal (INVALID_DEVICE if none).
CUresult physical_device(CUdevice device, int* physical);
/// The ordinal under which a physical device is visible, or -1.
CUdevice visible_device(int physical);

/// Writes "gpushare-sim[PID]: MESSAGE" to stderr in one write.
void log_message(const char* format, ...) __attribute__((format(printf, 1, 2)));

/// Scoped process-local lock.
class LocalLock {
 public:
  LocalLock() { pthread_mutex_lock(&sim().mutex); }
  ~LocalLock() { pthread_mutex_unlock(&sim().mutex); }
  LocalLock(const LocalLock&) = delete;
  LocalLock& operator=(const LocalLock&) = delete;
};

/// Scoped state-file lock; ok() is false (and the failure logged) when the
/// lock could not be taken.
class SharedLock {
 public:
  SharedLock();
  ~SharedLock();
  bool ok() const { return locked_; }
  StateLayout* layout() const { return sim().state.layout(); }
  SharedLock(const SharedLock&) = delete;
  SharedLock& operator=(const SharedLock&) = delete;

 private:
  bool locked_ = false;
};
/// What an operation returns when the state file cannot be locked.
inline constexpr CUresult kStateUnavailable = CUDA_ERROR_OPERATING_SYSTEM;

// Time.
std::int64_t now_ns();
void sleep_until(std::int64_t deadline_ns);

// Work on the scheduler model (timeline.cc). A process's kernels are
// scheduling context sim().slot of their device's model.
inline Ready later(Ready a, Ready b) {
  return Ready{a.seq > b.seq ? a.seq : b.seq, a.floor_ns > b.floor_ns ? a.floor_ns : b.floor_ns};
}
/// Room for a copy of a model (projections); use only under the state lock.
SchedModel& scheduler_scratch();
/// Whether the work is done now; false with *status set when the state
/// file could not be locked.
bool ready_now(int device, Ready ready, CUresult* status);
/// Sleeps until the work is done: until its projected end, then looks
/// again (another process's launch may have pushed it back). Never spins.
CUresult wait_ready(int device, Ready ready);
/// When the work ended, or -1 while it has not. Settled time only.
std::int64_t ready_time(int device, Ready ready, CUresult* status);
/// When the work is projected to end if nothing more is launched (its end
/// if done). Requires the state lock.
std::int64_t projected_time(StateLayout* layout, int device, Ready ready);

// The copy path (transfer.cc, link.h). A place is a physical device, or
// kHostPlace for host memory.
inline constexpr int kHostPlace = -1;
/// Reserves a transfer of `bytes` from one place to another on the copy
/// path, starting no earlier than `earliest_ns` (nor now); returns its end.
/// Host to host takes no time (the CPU copies). Managed-memory migrations
/// run at GPUSHARE_SIM_MIGRATE_BANDWIDTH when that is below the link's
/// speed. Requires the state lock.
std::int64_t reserve_transfer(StateLayout* layout, int from, int to, std::uint64_t bytes,
                              std::int64_t earliest_ns, bool migration);
/// Records managed bytes leaving `device` until `end_ns`: an allocation
/// that needs them waits for that end. Requires the state lock.
void note_outbound(StateLayout* layout, int device, std::uint64_t bytes, std::int64_t end_ns);
/// Waits until a synchronous transfer ends, precisely: sleeps, then yields
/// for the last 100 us (sleeps overshoot by the timer slack).
void wait_transfer(std::int64_t end_ns);
/// Asks this thread's outermost DeferredWait to sleep until then; without
/// one, sleeps at once.
void defer_wait_until(std::int64_t deadline_ns);
/// Sleeps, when it goes out of scope, until the latest deadline given to
/// defer_wait_until() meanwhile: an allocation waits for the eviction it
/// caused. Declared before the LocalLock, it sleeps after the lock is gone.
class DeferredWait {
 public:
  DeferredWait();
  ~DeferredWait();
  DeferredWait(const DeferredWait&) = delete;
  DeferredWait& operator=(const DeferredWait&) = delete;
};

// Contexts (context.cc).
/// The calling thread's current context, if any and alive.
Context* current_context();
/// CUDA_SUCCESS with the current context, else CUDA_ERROR_INVALID_CONTEXT.
CUresult require_context(Context** ctx);
bool context_alive(const Context* ctx);
Context* lookup_context(CUcontext handle);

// Streams and events (stream.cc).
/// Resolves a stream handle for `ctx`; per_thread for _ptsz/_ptds calls.
CUresult resolve_stream(Context* ctx, CUstream handle, bool per_thread, Stream** stream);
/// What work enqueued now on `stream` waits for, given the legacy-stream rules.
Ready stream_earliest(const Stream* stream);
/// Records that `stream` has work completing at `ready`.
void stream_push(Stream* stream, Ready ready);
Stream* create_stream(Context* ctx, StreamKind kind, unsigned flags, int priority);
void destroy_stream(Stream* stream);
/// Frees the streams and events of a dying context.
void release_context_streams(Context* ctx);
/// Returns pools' cached bytes above their release threshold (at syncs).
void trim_pools_at_sync();

// Memory registry (registry.cc).
Allocation* find_allocation(std::uintptr_t address);  ///< the one containing address
Allocation* find_allocation_at(std::uintptr_t base);  ///< the one starting at base
bool insert_allocation(const Allocation& allocation);
void erase_allocation(Allocation* allocation);
/// True when [address, address+bytes) lies in one device-accessible allocation.
bool device_range_ok(std::uintptr_t address, std::size_t bytes);
/// Anonymous, lazily backed memory ("real copies, free huge allocations").
void* map_memory(std::size_t bytes);
void unmap_memory(void* address, std::size_t bytes);
/// Maps `bytes` for `allocation` (its base, size and mapped_bytes are set
/// here) and records it. Returns the base, or 0 when either step failed, in
/// which case nothing stays mapped; the caller undoes its own charges.
std::uintptr_t map_and_insert(Allocation allocation, std::size_t bytes);
/// Charges or refunds the process's share of a device in the state file.
CUresult charge_device(int device, std::uint64_t bytes);
void uncharge_device(int device, std::uint64_t bytes);
/// Frees an allocation of any kind (and its charge).
void free_allocation(Allocation* allocation);
/// Frees every allocation (and array) belonging to a context.
void release_context_memory(Context* ctx);
/// Destroys the arrays of a context (arrays.cc).
void release_context_arrays(Context* ctx);
Reservation* find_reservation(std::uintptr_t address, std::size_t bytes);

// VMM (vmm.cc).
/// Unmaps a cuMemMap mapping (restoring the reservation) and erases it.
void unmap_vmm(Allocation* mapping);

// Modules (module.cc).
void release_context_modules(Context* ctx);
Function* lookup_function(CUfunction handle);

// The process checkpoint (checkpoint.cc).
/// Writes the devices this process sees into its slot; requires the state lock.
void publish_checkpoint_slot();
/// Starts the thread that answers other processes' checkpoint requests.
void start_checkpoint_thread();

// Pools (pool.cc).
MemPool* device_default_pool(int device);

}  // namespace gpushare::simgpu::driver

#include "simgpu/driver/object_pool.inl"
