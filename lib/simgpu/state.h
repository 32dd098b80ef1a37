// The simulated GPU's shared state: one file, mapped MAP_SHARED by every
// process that uses the simulated driver or NVML, so that all of them see
// one device (or several).
//
// What lives here, and why here:
//   - memory: each process's charges per device (allocations, pools, VMM
//     handles, context overhead) in its own slot, and managed allocations
//     with their device residency in a table. A device's used bytes are
//     always summed from those, never kept as a separate counter, so a
//     process that dies in the middle of an update cannot leave the total
//     inconsistent with its parts.
//   - time: per device, the scheduler model (timeslice.h) that shares the
//     device between processes: their unfinished kernels, the ends of
//     recent ones, busy time per process and a ring of recent busy
//     intervals, from which NVML computes device and per-process
//     utilisation over a window. The model's contexts are process slots:
//     context N is whichever process holds slot N (all CUDA contexts of one
//     process on a device are one scheduling context), and a slot's
//     unfinished kernels are dropped when the slot is released.
//   - collectives: the communicators of multi-GPU jobs and their
//     unfinished collectives (collective.h), which tie the devices'
//     models together.
//
// Concurrency: one robust, process-shared mutex. A holder killed by SIGKILL
// leaves it EOWNERDEAD; the next locker marks it consistent and reclaims the
// dead process's slot. Every lock has a bounded wait, so a holder stopped by
// SIGSTOP gives an error rather than a hang.
//
// Crash cleanup: a slot records its pid and the process start time (from
// /proc), so a reused pid is not mistaken for the original. Dead (or
// zombie) processes' charges and managed records are reclaimed whenever a
// process attaches and before any allocation is refused.
//
// Versioning: the file starts with a magic string, a layout version and the
// layout's size; anything else is refused with a message naming the file,
// never read as if it were ours.
//
// Plain C-style code (no allocation, no exceptions, no libstdc++) because it
// runs inside libcuda.so.1 and libnvidia-ml.so.1.
#pragma once

#include <pthread.h>

#include <cstddef>
#include <cstdint>

#include "simgpu/collective.h"
#include "simgpu/config.h"
#include "simgpu/link.h"
#include "simgpu/timeslice.h"

namespace gpushare::simgpu {

inline constexpr char kStateMagic[16] = "gpushare-simgpu";
// 2: busy intervals carry a pid; 3: a scheduler model per device;
// 4: a copy path (link.h) per device and the link settings
// 5: collectives across devices (collective.h), gated kernels in the model,
//    and the scheduler's cold start after a switch (timeslice.h, cold_ns)
// 6: the process checkpoint (ProcessSlot's ckpt_* fields, driver/checkpoint.cc)
inline constexpr std::uint32_t kStateLayoutVersion = 6;
inline constexpr int kMaxProcesses = kSchedContexts;  ///< a slot is a scheduling context
inline constexpr int kMaxManaged = 4096;
/// How long lock() waits for a holder before giving up with an error.
inline constexpr std::int64_t kLockTimeoutNs = 10'000'000'000;

struct DeviceState {
  std::uint64_t memory_bytes;
  std::uint64_t ctx_overhead_bytes;
  std::uint32_t sms;
  std::uint32_t reserved0;
  std::uint8_t uuid[16];
  std::uint64_t managed_generation;  ///< bumped on every residency change
  SchedModel sched;                  ///< who runs when; contexts are process slots
  DeviceLink link;                   ///< copies and migrations (link.h)
  /// Managed bytes on their way to the host: already off the device in the
  /// accounting, but an allocation that needs them waits until this end.
  std::uint64_t outbound_bytes;
  std::int64_t outbound_end_ns;
};

/// A process's checkpoint state: CUprocessState's values.
enum CheckpointState : std::uint32_t {
  kCheckpointRunning = 0,
  kCheckpointLocked = 1,
  kCheckpointCheckpointed = 2,
  kCheckpointFailed = 3,
};
/// What another process asks of a process's checkpoint thread.
enum CheckpointOp : std::uint32_t {
  kCheckpointOpNone = 0,
  kCheckpointOpLock = 1,
  kCheckpointOpCheckpoint = 2,
  kCheckpointOpRestore = 3,
  kCheckpointOpUnlock = 4,
};

struct ProcessSlot {
  std::int32_t pid;  ///< 0: free
  /// CheckpointState (layout 5; was reserved). Written by the process's
  /// checkpoint thread under the lock; read by anyone.
  std::uint32_t ckpt_state;
  std::uint64_t start_ticks;                 ///< /proc/PID/stat start time
  std::uint64_t charged_bytes[kMaxDevices];  ///< all but managed residency
  std::uint32_t contexts[kMaxDevices];       ///< live contexts, for NVML
  char name[32];                             ///< /proc/PID/comm
  // Layout 5: the process checkpoint (driver/checkpoint.cc). A caller (any
  // other process) writes a request under the lock and wakes ckpt_request;
  // the process's own checkpoint thread does the work, writes ckpt_result,
  // clears the request and bumps ckpt_done (both futex words).
  std::uint32_t ckpt_request;     ///< CheckpointOp under way; 0 none
  std::uint32_t ckpt_done;        ///< bumped at every answer
  std::int32_t ckpt_result;       ///< the CUresult of the last request
  std::int32_t ckpt_tid;          ///< the checkpoint thread (cuCheckpointProcessGetRestoreThreadId)
  std::uint32_t ckpt_timeout_ms;  ///< the lock request's timeout; 0 none
  /// CUdevice ordinal -> device in this file: the process's visible devices
  /// (CUDA_VISIBLE_DEVICES at cuInit), remapped by each restore.
  std::uint32_t ordinal_count;
  std::int8_t ordinal_device[kMaxDevices];
  /// The restore request's map: device checkpointed -> device to restore
  /// on (-1: the device was not checkpointed).
  std::int8_t restore_map[kMaxDevices];
  /// What the checkpoint took off each device (its charges, contexts
  /// included; managed residency is the process's own to put back).
  std::uint64_t saved_bytes[kMaxDevices];
  std::uint32_t saved_contexts[kMaxDevices];
  std::int64_t ckpt_last_ns;  ///< how long the last checkpoint or restore took
};

enum ManagedFlag : std::uint32_t {
  kManagedPreferDevice = 1,  ///< CU_MEM_ADVISE_SET_PREFERRED_LOCATION on the device
  kManagedPreferHost = 2,    ///< ... on the host
  kManagedAccessedBy = 4,    ///< CU_MEM_ADVISE_SET_ACCESSED_BY
  kManagedReadMostly = 8,    ///< CU_MEM_ADVISE_SET_READ_MOSTLY
  /// The last explicit cuMemPrefetchAsync of the whole record went to the
  /// device / to the host (CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION:
  /// what was asked, not where the bytes are; an eviction changes neither).
  kManagedPrefetchedDevice = 16,
  kManagedPrefetchedHost = 32,
};

struct ManagedRecord {
  std::int32_t pid;  ///< 0: free
  std::int32_t device;
  std::uint64_t id;  ///< chosen by the owner, to recognise its record
  std::uint64_t size_bytes;
  std::uint64_t resident_bytes;  ///< on the device; the rest is on the host
  std::uint32_t flags;           ///< ManagedFlag bits
  std::uint32_t context;         ///< the owner's context serial number
};

struct StateHeader {
  char magic[16];
  std::uint32_t layout_version;
  std::uint32_t layout_bytes;
  std::uint32_t device_count;
  std::uint32_t ready;                ///< 1 once initialised
  std::uint64_t migrate_bytes_per_s;  ///< a cap on migrations; 0: the link's speed
  std::uint32_t managed_slowdown_milli;
  std::uint32_t managed_high_water;  ///< managed records at and past this are free
  std::uint64_t link_bytes_per_s;    ///< GPUSHARE_SIM_PCIE_GBPS
  std::int64_t link_latency_ns;      ///< GPUSHARE_SIM_PCIE_LATENCY_US
  std::uint64_t local_bytes_per_s;   ///< GPUSHARE_SIM_DTOD_GBPS
  std::uint32_t evict;               ///< GPUSHARE_SIM_EVICT: allocations evict managed bytes
  std::uint32_t reserved0;
};

struct StateLayout {
  StateHeader header;
  alignas(64) pthread_mutex_t mutex;
  DeviceState devices[kMaxDevices];
  ProcessSlot processes[kMaxProcesses];
  ManagedRecord managed[kMaxManaged];
  CollectiveTable collectives;  ///< communicators and their unfinished collectives
};

/// The mapped state file. Constant-initialisable, so a static instance in
/// the driver needs no constructor to run.
class StateFile {
 public:
  constexpr StateFile() = default;

  /// Opens config.state_path, creating and initialising it from `config`
  /// when absent or empty; refuses a foreign, outdated or corrupt file.
  bool open(const SimConfig& config, char* error, std::size_t error_bytes);
  void close();
  StateLayout* layout() const { return layout_; }

  /// Takes the lock, waiting at most kLockTimeoutNs. After a holder died,
  /// repairs the state (reclaims dead processes) before returning.
  bool lock(char* error, std::size_t error_bytes);
  void unlock();

 private:
  int fd_ = -1;
  StateLayout* layout_ = nullptr;
  char path_[kPathBytes] = {};
};

/// Whether a process is alive: it exists, is not a zombie, and (when
/// start_ticks is known) started when the slot says it did.
using Liveness = bool (*)(std::int32_t pid, std::uint64_t start_ticks);
bool process_alive(std::int32_t pid, std::uint64_t start_ticks);
/// /proc/PID/stat's start time; 0 when unknown.
std::uint64_t process_start_ticks(std::int32_t pid);

/// Checks the invariants that keep indexing in bounds; a layout failing
/// them is corrupt.
bool validate_layout(const StateLayout* layout, char* error, std::size_t error_bytes);

/// Writes a fresh layout for `config` (the caller owns the memory).
void initialise_layout(StateLayout* layout, const SimConfig& config);

// Indices read from the shared file are clamped before use: another
// process (or a person) may scribble on it while we run, and that must
// give wrong numbers at worst, never an access out of bounds.
inline std::uint32_t managed_bound(const StateLayout* layout) {
  std::uint32_t high = layout->header.managed_high_water;
  return high < kMaxManaged ? high : kMaxManaged;
}
inline int managed_device_index(const ManagedRecord& record) {
  return record.device >= 0 && record.device < kMaxDevices ? record.device : 0;
}

// Everything below requires the lock.

/// Lowers the managed table's high-water mark past trailing free records.
void shrink_managed_high_water(StateLayout* layout);

/// Frees the slots and managed records of dead processes; returns how many
/// processes were reclaimed.
int reclaim_dead(StateLayout* layout, Liveness alive);
/// Registers a process; -1 when the table is full. A slot this very process
/// held before an exec() is emptied first.
int attach_process(StateLayout* layout, std::int32_t pid, std::uint64_t start_ticks,
                   const char* name);
/// Releases everything a process holds.
void detach_process(StateLayout* layout, int slot);
int live_process_count(const StateLayout* layout);

/// True when the file's devices are the ones `config` describes.
bool config_matches(const StateLayout* layout, const SimConfig& config);
/// Rewrites the device description (memory, SMs, overhead, count) and
/// keeps the counters; only sensible while no process is attached.
void reconfigure(StateLayout* layout, const SimConfig& config);

std::uint64_t device_used(const StateLayout* layout, int device);
std::uint64_t process_used(const StateLayout* layout, int slot, int device);
/// Charges `bytes` to a process on a device if they fit, first evicting
/// managed memory of any process to the host when that makes enough room
/// and the header allows it (memory preferring the host first, then memory
/// with no preference, then memory preferring the device). False, changing
/// nothing, if they do not fit. `*evicted` (if given) receives the bytes
/// evicted.
bool charge(StateLayout* layout, int slot, int device, std::uint64_t bytes,
            std::uint64_t* evicted = nullptr);
void uncharge(StateLayout* layout, int slot, int device, std::uint64_t bytes);

/// Adds a managed allocation; its bytes go on the device as far as free
/// memory allows when `on_device`. Returns the record index, -1 if full.
int managed_add(StateLayout* layout, int slot, int device, std::uint64_t id,
                std::uint64_t size_bytes, std::uint32_t flags, std::uint32_t context,
                bool on_device);
/// The record at `index` if it still belongs to (pid, id); else nullptr.
ManagedRecord* managed_find(StateLayout* layout, int index, std::int32_t pid, std::uint64_t id);
void managed_remove(StateLayout* layout, int index);
/// Moves up to `bytes` of a record to the device (as far as free memory
/// allows, after evicting other managed memory that does not prefer the
/// device) or to the host. Returns the bytes moved; `*evicted` (if given)
/// receives the bytes of other records evicted to make room.
std::uint64_t managed_migrate(StateLayout* layout, int index, std::uint64_t bytes, bool to_device,
                              std::uint64_t* evicted = nullptr);
/// Free bytes of a device (total less used, never negative).
std::uint64_t device_free(const StateLayout* layout, int device);
/// Managed bytes of (pid, device, context): total and on the host.
void managed_totals(const StateLayout* layout, std::int32_t pid, int device, std::uint32_t context,
                    std::uint64_t* total_bytes, std::uint64_t* host_bytes);

/// Settles the device's scheduler model up to now and returns it (with
/// collectives in flight, every device's: collective.h).
SchedModel* settled_model(StateLayout* layout, int device);

// The process checkpoint (driver/checkpoint.cc holds the protocol; these
// are its rules, kept here so that they are unit-testable).

/// Whether `op` may start in `state` (lock: running; checkpoint: locked;
/// restore: checkpointed; unlock: locked). A failed process takes none.
bool checkpoint_op_allowed(std::uint32_t state, std::uint32_t op);
/// The slot of a live process `pid`, or -1.
int find_process_slot(const StateLayout* layout, std::int32_t pid);

/// One device pair of a restore, as CUcheckpointGpuPair lays it out.
struct UuidPair {
  std::uint8_t old_uuid[16];
  std::uint8_t new_uuid[16];
};
enum class RestorePlan {
  kOk,
  kInvalid,   ///< a pair names a device not checkpointed, not visible, or twice; one missing
  kChipType,  ///< a pair's devices are of different chip types
};
/// Checks a restore's pairs against the slot (the devices it sees are the
/// devices checkpointed; the pairs, when given, must map each of them once,
/// onto a device of the same chip type that the process also sees: a
/// permutation of its devices) and fills `map` (device checkpointed ->
/// device to restore on; identity without pairs).
RestorePlan plan_restore(const StateLayout* layout, int slot, const UuidPair* pairs, int count,
                         std::int8_t map[kMaxDevices]);
/// Takes a process's charges and contexts off every device into its
/// saved_* fields; `data_bytes` (if given) receives, per device, the bytes
/// that are data rather than context overhead (what the checkpoint copies).
void checkpoint_release(StateLayout* layout, int slot, std::uint64_t data_bytes[kMaxDevices]);
/// Charges the saved bytes onto the devices `map` names and remaps the
/// process's ordinals; false, changing nothing, when one does not fit.
bool checkpoint_reacquire(StateLayout* layout, int slot, const std::int8_t map[kMaxDevices]);

/// The deterministic UUID of simulated device `index`.
void device_uuid(int index, std::uint8_t uuid[16]);
/// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as NVML writes it.
void format_device_uuid(int index, char* text, std::size_t bytes);

/// Which of `physical_count` devices a process sees, in order, following
/// CUDA_VISIBLE_DEVICES: `text` null (unset) means all; otherwise a comma-
/// separated list of ordinals or UUIDs ("GPU-...", or a prefix naming one
/// device), which ends at the first entry that names no device or repeats
/// one, as with the real driver. Returns how many are visible.
int parse_visible_devices(const char* text, int physical_count, int visible[kMaxDevices]);

/// The layout's scheduling policy as the config names it (0 timeslice, 1 fifo).
SchedPolicy sched_policy_of(const SimConfig& config);

/// CLOCK_MONOTONIC in nanoseconds: the timeline's clock. lib/common/clock.h's
/// twin, since the simulator may not include lib/common (it links libc only:
/// CONTRIBUTING.md); the driver's now_ns() reads this one.
std::int64_t monotonic_ns();

}  // namespace gpushare::simgpu
