// The coordinator's wire protocol, gpushare-protocol(7): versioned JSON
// Lines over a unix stream socket. Every message is one compact JSON object
// on one line, at most kMaxMessageBytes long, with "kind" and "version".
//
//   job -> coordinator        register                    (first and only message)
//   coordinator -> job        registered + 2 memfds, or error
//   ctl -> coordinator        list | show | node | set | pause | resume | suspend (any number)
//   coordinator -> ctl        records (an array of output records), or error
//
// This file holds the typed messages and their encoding; parsing is strict
// about what it needs (types, sizes, bounds) and ignores unknown fields, as
// every gpushare reader does. Only protocol.cc includes nlohmann/json.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/result.h"
#include "coord/contract/control_block.h"
#include "coord/contract/version.h"

namespace gpushare::coord {

/// Longest message, newline excluded, either way except records replies.
inline constexpr std::size_t kMaxMessageBytes = 16 * 1024;
/// Longest records reply a client accepts.
inline constexpr std::size_t kMaxReplyBytes = 64 * 1024 * 1024;
inline constexpr std::size_t kMaxSelectorBytes = 256;


struct DeviceRegistration {
  std::string uuid;  ///< "GPU-..." or "MIG-..."
  std::uint64_t mem_total_bytes = 0;
  std::uint64_t start_limit_bytes = kNoLimit;  ///< the limit the job started with
  std::uint64_t mem_limit_bytes = kNoLimit;        ///< the limit in force (after a restart)
};

struct RegisterRequest {
  std::string name;
  std::uint32_t qos = kQosProduction;
  std::uint64_t compute_cap_ppm = kNoLimit;  ///< the job's static cap (GPUSHARE_COMPUTE)
  std::uint64_t id_hint = 0;                 ///< 0: none
  /// The message comes with a descriptor of the job's tree file (SCM_RIGHTS),
  /// the proof that the process belongs to the job.
  bool tree = false;
  std::vector<DeviceRegistration> devices;
};

struct ListRequest {};
struct NodeRequest {};
struct ShowRequest {
  std::string job;  ///< an id, a pid or a name
};
struct SetRequest {
  std::string job;
  std::optional<std::string> mem_limit;  ///< a size, a percentage of each device, or "none"
  std::optional<std::uint32_t> qos;
  std::optional<std::string> name;
  std::optional<std::string> compute;  ///< "30%" or "none"
};
struct PauseRequest {
  std::string job;
  bool pause = true;  ///< false: resume
};

/// Move the job's device memory to the host (its reverse is
/// PauseRequest with pause false, "resume").
struct SuspendRequest {
  std::string job;
};

/// Move a running job to another GPU of the node through the driver's
/// process checkpoint; `to` is a GPU UUID or an index (as the coordinator's
/// driver counts them).
struct MigrateRequest {
  std::string job;
  std::string to;
};

/// From a registered job (layout 5, control_block.h "Wake-ups"): its
/// memory counters changed in a way the memory loop must see now (an
/// allocation waits for room); the coordinator runs the loop at once.
struct RoomRequest {};

using Request = std::variant<RegisterRequest, ListRequest, NodeRequest, ShowRequest, SetRequest,
                             PauseRequest, SuspendRequest, RoomRequest, MigrateRequest>;

/// Parses one message line (without its newline). Errors name the field.
Result<Request> parse_request(std::string_view line);

/// The line for a request, newline included.
std::string encode_request(const Request& request);

// ---- replies ----------------------------------------------------------------

/// What the coordinator knows of one job, for the "job" output record.
struct JobDeviceView {
  std::string uuid;
  std::uint64_t mem_total_bytes = 0;
  std::uint64_t mem_used_bytes = 0;
  std::uint64_t mem_limit_bytes = kNoLimit;
  std::uint64_t start_limit_bytes = kNoLimit;
  /// Where an opportunistic job's managed-backed memory is (0 for
  /// production), and the arbiter's target (kNoLimit: none).
  std::uint64_t device_resident_bytes = 0;
  std::uint64_t host_resident_bytes = 0;
  std::uint64_t device_resident_target = kNoLimit;
  /// Plain (VMM-backed) bytes a suspend copied to the host; also counted in
  /// host_resident_bytes.
  std::uint64_t suspended_bytes = 0;
  /// Layout 6: the bytes of a migration under way (still counted where
  /// they were), and the managed bytes the driver evicted to the host by
  /// itself (already counted in host_resident_bytes).
  std::uint64_t migrating_bytes = 0;
  std::uint64_t evicted_bytes = 0;
};
/// A job that holds more than its limit, as the coordinator sees it from
/// outside the job (enforcement.h).
struct ViolationView {
  std::string device;  ///< UUID
  std::uint64_t observed_bytes = 0;
  std::uint64_t limit_bytes = 0;
  std::string action;  ///< warn | pause | kill
};
/// A process of a job on several GPUs that holds memory on a GPU: one of
/// its ranks (torchrun starts one process per GPU, all of one tree).
struct RankView {
  std::int64_t pid = 0;
  std::vector<std::string> gpus;  ///< UUIDs of the GPUs it holds memory on
  std::uint64_t iterations = 0;   ///< its steps (iteration boundaries) so far
  double steps_per_s = -1;        ///< as the compute loop measured it; < 0: not measured
  /// Its mean collective span and its wait in it, per collective (< 0: not
  /// measured), and whether the other ranks wait for it (compute/gang.h).
  double collective_ms = -1;
  double wait_ms = -1;
  bool waited_for = false;
};

struct JobView {
  std::uint64_t id = 0;
  std::string name;
  std::int64_t pid = 0;            ///< the job's first registered process
  std::vector<std::int64_t> pids;  ///< all its registered processes
  std::uint32_t uid = 0;
  std::uint32_t qos = kQosProduction;
  /// running | paused | stale | suspending | suspended | resuming |
  /// spilling | restoring (a running job moving its managed memory to the
  /// host or back: control_block.h layout 6) | migrating (to another GPU)
  std::string state;
  /// Why a paused job waits: "operator" (pause, suspend or the enforcer),
  /// "memory" (the coordinator's own: its memory is on the host while
  /// production runs). Empty while it runs.
  std::vector<std::string> pause_reasons;
  std::uint64_t launches = 0;
  std::uint64_t iterations = 0;
  /// The compute controller's view (first device): measured and estimated
  /// speeds, the limits in force. Negative: not measured.
  double speed_per_s = -1;
  bool speed_in_iterations = false;
  double solo_speed_per_s = -1;
  double slowdown = std::numeric_limits<double>::quiet_NaN();  ///< NaN: not measured
  double gpu_share = -1;
  std::uint64_t launch_budget = kNoLimit;
  std::uint64_t launch_window_ns = 0;
  std::uint64_t max_queued = kNoLimit;
  std::uint64_t compute_cap_ppm = kNoLimit;  ///< the user's static cap
  std::uint64_t gpu_limit_ppm = kNoLimit;    ///< the cap in force (static or the loop's)
  std::string compute_phase;                 ///< the device's controller phase
  /// Why the job is held, in one word (gpushare-ctl(1), "Why a job is
  /// held"), and over its last second: the GPU time its interposer
  /// measured and the time its launches waited. launch_cost_ns: the GPU
  /// time per launch its admission learned (0: not learned).
  std::string hold;
  std::uint64_t gpu_ns_last_window = 0;
  std::uint64_t held_ns_last_window = 0;
  std::uint64_t launch_cost_ns = 0;
  /// An opportunistic job beside the waiting rank of a gang, while it uses
  /// part of that rank's wait (`serve --gang-harvest on`): the rank's pid;
  /// 0 otherwise.
  std::int64_t uses_wait_of_pid = 0;
  /// Over the last window, on the job's first device: the GPU time that
  /// neither production nor processes outside gpushare used, and (an
  /// opportunistic job) the job's own GPU time in millionths of it; unset
  /// where not measured (coord/server/compute/free_share.h).
  std::optional<std::uint64_t> free_gpu_ns_last_window;
  std::optional<std::uint64_t> free_share_ppm;
  std::vector<JobDeviceView> devices;
  std::optional<ViolationView> violation;  ///< only while the job is a violator
  /// Why the job's last suspend was refused by the job itself (empty: none).
  std::string suspend_refused;
  /// How the last suspend went: "checkpoint" (the driver's process
  /// checkpoint: nothing left on the GPU) or "memory" (the interposer moved
  /// its memory; its context stays). Empty: never suspended.
  std::string suspend_path;
  /// The last migration's time (negative: none); why the last migration,
  /// or resume from a checkpoint, failed (empty: it did not).
  std::int64_t migration_ms = -1;
  std::string checkpoint_error;
  /// A request that changed nothing says so ("already suspended").
  std::string note;
  /// Its ranks, when its processes hold memory on two GPUs or more (empty
  /// otherwise: a one-GPU job's record has no "ranks").
  std::vector<RankView> ranks;
};

/// One device as the node report shows it, with totals per class.
struct ClassTotals {
  std::uint64_t jobs = 0;
  std::uint64_t mem_used_bytes = 0;
  std::uint64_t mem_limit_bytes = 0;  ///< kNoLimit when any job has none
  /// Spillable (managed-backed) memory on the device and on the host
  /// (only opportunistic jobs have any).
  std::uint64_t device_resident_bytes = 0;
  std::uint64_t host_resident_bytes = 0;
};
struct DeviceView {
  std::string uuid;
  std::uint64_t mem_total_bytes = 0;
  ClassTotals production;
  ClassTotals opportunistic;
};
struct NodeView {
  std::vector<DeviceView> devices;
  std::uint64_t paused_jobs = 0;
  /// Jobs on the node, each once however many GPUs it uses (a device
  /// counts the jobs on it).
  std::uint64_t production_jobs = 0;
  std::uint64_t opportunistic_jobs = 0;
};

std::string encode_registered(std::uint64_t job_id);
std::string encode_error(std::string_view message, std::string_view reason);
std::string encode_jobs(const std::vector<JobView>& jobs);
std::string encode_node(const NodeView& node);

/// The output record of a job (kind "job") and of a node report (one
/// "device" record per device, then one "node" record).
nlohmann::ordered_json job_record(const JobView& job);
std::vector<nlohmann::ordered_json> node_records(const NodeView& node);

/// Decodes a reply line to a control request: the records, or an Error
/// carrying the coordinator's message.
Result<std::vector<nlohmann::ordered_json>> decode_records(std::string_view line);

}  // namespace gpushare::coord
