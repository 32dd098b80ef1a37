// Jobs launched for a coordinator that have not registered yet.
//
// A job registers when it first touches CUDA, which may be long after
// gpushare-run started it (imports, data loading). A coordinator that exits
// when idle must not leave such a job behind: gpushare-run marks every job
// it launches with GPUSHARE_LAUNCHED_FOR=<the coordinator's socket>, which
// the job's processes inherit, and the coordinator, when its grace runs out
// with no job registered, looks for a live process of its own user that
// carries the mark for its socket; while one lives it waits another grace.
// Other users' processes are never counted (a co-tenant cannot keep a
// per-user coordinator alive, nor learn anything from the scan).
#pragma once

#include <sys/types.h>

#include <string>

namespace gpushare::coord::server {

/// Whether a process of `uid`, other than the caller, carries
/// GPUSHARE_LAUNCHED_FOR=`socket_path` in its environment. `proc` is the
/// proc file system's root (a test may pass a directory laid out like it).
bool launched_job_alive(const std::string& socket_path, uid_t uid,
                        const std::string& proc = "/proc");

}  // namespace gpushare::coord::server
