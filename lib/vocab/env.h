// The environment variables gpushare-run sets for a job and the interposer
// reads (gpushare-run(1), ENVIRONMENT). One list, so that the writer and the
// reader cannot drift apart. The job reads them once, at load time
// (interpose/core/settings.cc; the tree file's constructor,
// interpose/memory/tree.cc, reads kTree and kDisable before that, since it
// sets kTree); nothing on a hot path calls getenv.
#pragma once

namespace gpushare::env {

inline constexpr const char* kMemLimit = "GPUSHARE_MEM_LIMIT";  ///< SIZE, N% or unset
inline constexpr const char* kQos = "GPUSHARE_QOS";             ///< production | opportunistic
inline constexpr const char* kCompute = "GPUSHARE_COMPUTE";     ///< a static compute cap, "30%"
/// PATH ("%p": the pid): the compute trace (interpose/compute/compute_trace.h)
inline constexpr const char* kComputeTrace = "GPUSHARE_COMPUTE_TRACE";
inline constexpr const char* kJob = "GPUSHARE_JOB";             ///< the job's name
inline constexpr const char* kSocket = "GPUSHARE_SOCKET";       ///< the coordinator's socket
inline constexpr const char* kTree = "GPUSHARE_TREE";           ///< the job's shared tree file
inline constexpr const char* kSpill = "GPUSHARE_SPILL";         ///< on | off
inline constexpr const char* kSuspendable = "GPUSHARE_SUSPENDABLE";  ///< on | off (VMM backing)
/// on | off: held launches go to the interposer's launch queue (launch_queue.h)
inline constexpr const char* kLaunchQueue = "GPUSHARE_LAUNCH_QUEUE";
inline constexpr const char* kLog = "GPUSHARE_LOG";             ///< error | warning | info | debug
inline constexpr const char* kDebug = "GPUSHARE_DEBUG";         ///< non-empty: log the client too
inline constexpr const char* kDisable = "GPUSHARE_DISABLE";     ///< 1: pass everything through
/// The coordinator socket gpushare-run launched the job for: a coordinator
/// that exits when idle stays while a process of its user carries it.
inline constexpr const char* kLaunchedFor = "GPUSHARE_LAUNCHED_FOR";

}  // namespace gpushare::env
