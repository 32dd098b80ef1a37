// How far a suspend or a resume has moved a job's memory, in one line for
// a terminal's stderr: "suspending job 3: 2.1GiB of 8GiB moved, 1.4GiB/s".
// From two records of the same job (`show` at the start and now): what
// lies on the host grows by what a suspend moved (mem_host_resident_bytes
// counts managed memory on the host and the plain memory a suspend
// copied) and shrinks by what a resume brought back.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>

namespace gpushare::ctl {

struct MoveProgress {
  std::uint64_t moved_bytes = 0;
  std::uint64_t total_bytes = 0;  ///< 0: not known
  std::uint64_t batch_bytes = 0;  ///< the batch under way (mem_migrating_bytes)
};

/// What moved between `start` and `now`; `to_host` for a suspend.
MoveProgress move_progress(const nlohmann::ordered_json& start, const nlohmann::ordered_json& now,
                           bool to_host);

/// "suspending job 3: 2.1GiB of 8GiB moved, 1.4GiB/s, 6s" (`verb` is
/// "suspending" or "resuming"; the rate from the start).
std::string move_progress_line(const std::string& verb, const std::string& job,
                               const MoveProgress& progress, double elapsed_s);

}  // namespace gpushare::ctl
