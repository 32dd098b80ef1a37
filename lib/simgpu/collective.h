// Collectives across the simulated devices of one node: what NCCL's
// all-reduce does to the GPUs' time, as a data-parallel job's ranks meet
// at it every step.
//
// A rank launches the collective kernel ncclDevKernel_AllReduce_Sum_f32_RING_LL
// (module_image.h; named as NCCL names its all-reduce kernels, so that the
// interposer tells it from other kernels as it tells NCCL's) with its communicator (a 64-bit id its ranks agree on), its rank, the
// world size and the message size. On a real GPU, NCCL's kernel starts on
// each rank's device when that device gets to it, then spins (the device
// looks busy, and is: the kernel holds its time slices) until the peers'
// kernels have started too, then moves the data over the GPU-to-GPU link.
// The model does the same with the time-slice model's gated kernels
// (timeslice.h): each rank's kernel is queued on its device as work of its
// process, spins from its start until its release, the latest of all the
// ranks' starts, then runs for the transfer time:
//
//   transfer = latency + 2 (N - 1) / N * bytes / link speed
//
// (a ring all-reduce sends and receives 2 (N - 1) / N of the message per
// rank; NCCL's "bus bandwidth" is defined so that it equals the link's
// speed at best). A kernel descheduled after its release makes no progress
// on the transfer meanwhile, so an opportunistic job's slice on one device
// delays that rank's collective, and through it every rank.
//
// Matching: a rank's k-th collective on a communicator meets the other
// ranks' k-th (an op in the table below). The first launch on a
// communicator registers it (the rendezvous: no separate step, as the
// kernels themselves wait for each other).
//
// Settling: a rank's start depends only on its own device; its end on all
// the ranks' starts. So the devices' models are settled together
// (collective_settle): each as far as it can go, a collective's spin
// stopping at the earliest time the release can be, given what the other
// devices have settled (an unstarted peer's kernel cannot start before its
// device's clock; one not yet launched, not before now, as a collective's
// launch may not start before the moment of the launch); then the starts
// learnt are published, releases set, bounds raised, and again, until every
// device is at "now" or nothing more can be learnt (a real deadlock: ranks
// waiting on collectives launched in different orders; the devices then
// stay stopped, as NCCL hangs).
//
// A rank that dies (killed, its slot reclaimed) breaks its communicator:
// its peers' waiting collectives are released at once, and further
// launches on it fail (CUDA_ERROR_LAUNCH_FAILED), as NCCL reports an error
// and torchrun stops the job. A rank that exits (the library unloaded at
// exit) has ended: the others' collectives no longer wait for it, so ranks
// that stop on their own clocks (--duration) one step apart all finish. The table lives in the shared state file, which other
// processes may write: every index read from it is checked.
//
// Plain C-style code (no allocation, no libstdc++): it runs inside
// libcuda.so.1.
#pragma once

#include <cstdint>

#include "simgpu/config.h"
#include "simgpu/timeslice.h"

namespace gpushare::simgpu {

struct StateLayout;

inline constexpr int kCollectiveGroups = 16;  ///< communicators in use at once
inline constexpr int kCollectiveRanks = 8;    ///< ranks of one communicator (one node)
inline constexpr int kCollectiveOps = 128;    ///< collectives unfinished at once, all groups
inline constexpr char kAllreduceKernelName[] = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";

/// The GPU-to-GPU link's defaults, by kind (GPUSHARE_SIM_GPU_LINK).
///   nvlink: an H100 SXM5's NVLink 4 carries 900 GB/s in both directions
///     together (NVIDIA H100 Tensor Core GPU datasheet), 450 GB/s each way;
///     NCCL's all-reduce bus bandwidth on 8 H100s in nccl-tests comes
///     close to that.
///   pcie: peer-to-peer over PCIe Gen5 x16 runs at the link's speed at
///     best: the 51 GB/s of pinned host copies measured on an H100 that the
///     host link (GPUSHARE_SIM_PCIE_GBPS) uses too.
/// The fixed cost per collective (launch, ring set-up, the small-message
/// time nccl-tests shows) is an assumption of the model, of the order of
/// the 10-20 microseconds small all-reduces take in nccl-tests.
inline constexpr std::uint64_t kNvlinkBytesPerS = 450'000'000'000;
inline constexpr std::int64_t kNvlinkLatencyNs = 10'000;
inline constexpr std::uint64_t kPcieP2pBytesPerS = 51'000'000'000;
inline constexpr std::int64_t kPcieP2pLatencyNs = 20'000;

/// What a collective kernel's parameters say.
struct CollectiveCall {
  std::uint64_t bytes;  ///< the message, per rank
  std::uint64_t comm;   ///< the communicator: nonzero, agreed by its ranks
  std::uint32_t rank;
  std::uint32_t world_size;
};

struct CollectiveGroup {
  std::uint64_t comm;  ///< 0: free
  std::uint32_t world_size;
  std::uint32_t broken;                       ///< a rank died
  std::uint32_t ended;                        ///< bit r: rank r exited; nobody waits for it
  std::uint32_t reserved1;
  std::int32_t pid[kCollectiveRanks];         ///< 0: not (or no longer) a member
  std::int32_t slot[kCollectiveRanks];        ///< its process slot (scheduling context)
  std::int32_t device[kCollectiveRanks];      ///< where its last collective ran
  std::uint64_t launched[kCollectiveRanks];   ///< collectives the rank launched
  std::uint64_t waited_ns[kCollectiveRanks];  ///< spun waiting for the others, all ops
  std::uint64_t last_count[kCollectiveRanks];  ///< ops it alone was the last to start
  std::uint64_t released;                     ///< ops whose ranks all started
  std::int32_t last_rank;  ///< the last to start the latest op; -1: none (or a tie)
  std::uint32_t reserved0;
};

struct CollectiveOp {
  std::uint32_t group_plus1;  ///< 0: free
  std::uint32_t reserved0;
  std::uint64_t number;  ///< its group's 1st, 2nd, ... collective
  std::uint64_t bytes;
  std::int64_t transfer_ns;
  std::int64_t release_ns;                 ///< -1 until every rank started
  std::uint64_t seq[kCollectiveRanks];     ///< each rank's kernel; 0 not launched
  std::int64_t start_ns[kCollectiveRanks];  ///< -1 not started (or not known yet)
  std::int32_t device[kCollectiveRanks];
  std::int32_t slot[kCollectiveRanks];
};

struct CollectiveTable {
  std::uint64_t link_bytes_per_s;  ///< GPUSHARE_SIM_GPU_LINK(_GBPS)
  std::int64_t link_latency_ns;
  std::uint32_t open_ops;  ///< ops in use: with none, devices settle one by one
  std::uint32_t reserved0;
  CollectiveGroup groups[kCollectiveGroups];
  CollectiveOp ops[kCollectiveOps];
};

/// Why a collective launch was refused.
enum class CollectiveRefusal {
  kNone,
  kBadCall,      ///< rank, world size, communicator or size out of range
  kMismatch,     ///< another world size, or message size, than the peers'
  kRankTaken,    ///< another live process is that rank
  kBroken,       ///< a rank of the communicator died
  kTableFull,    ///< too many communicators or unfinished collectives
  kQueueFull,    ///< the device's model is full: wait and retry
};

/// The transfer time of an all-reduce of `bytes` among `world_size` ranks.
std::int64_t collective_transfer_ns(const CollectiveTable& table, std::uint64_t bytes,
                                    std::uint32_t world_size);

// Everything below requires the state lock.

/// Queues a rank's collective kernel on `device` for process slot `slot`
/// (pid `pid`) at the model's clock, not before max(`not_before_ns`,
/// `now_ns`). Returns its sequence number on the device's model, or 0 and
/// the reason in *refusal.
std::uint64_t collective_enqueue(StateLayout* layout, const CollectiveCall& call, int slot,
                                 std::int32_t pid, int device, std::int64_t now_ns,
                                 std::int64_t not_before_ns, CollectiveRefusal* refusal);

/// Settles every device's model up to `to_ns` together (see above).
void collective_settle(StateLayout* layout, std::int64_t to_ns);

/// A process slot is being released: its communicators break (see above).
void collective_forget_slot(StateLayout* layout, int slot, std::int64_t now_ns);

/// The process in `slot` is exiting: it has ended in its communicators.
void collective_leave(StateLayout* layout, int slot);

/// When kernel `seq` on `device` ends if nothing more is launched, the
/// unknown releases of collectives estimated from the peers' devices (their
/// projected starts; a peer that has not launched yet, a short while from
/// now). -1 when it cannot be told. The scratch models are the caller's.
std::int64_t collective_projected_end(StateLayout* layout, int device, std::uint64_t seq,
                                      SchedModel* scratch, SchedModel* scratch2);

/// Checks the invariants that keep indexing in bounds.
bool collective_valid(const CollectiveTable& table);

}  // namespace gpushare::simgpu
