// Who may do what, decided from the caller's peer credentials (SO_PEERCRED
// and SO_PEERGROUPS, taken by the kernel at connect time, so a client
// cannot lie about them).
//
//   - root, and members of the admin group (serve --admin-group), may act on
//     any job and change anything;
//   - any other user may act only on jobs of their own uid, and may neither
//     make a job production nor raise a memory limit above the one the job
//     started with (lowering it, and raising it back up to that, is fine);
//   - anyone may list and show jobs and the node report.
// A refused request changes nothing; the Error says why.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace gpushare::coord::server {

struct Caller {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  ///< supplementary groups
};

struct Policy {
  std::optional<gid_t> admin_gid;
  std::string admin_group_name;  ///< for messages
};

/// Root, or a member of the admin group.
bool is_admin(const Caller& caller, const Policy& policy);

/// What a request would change on one job, for the decision.
struct Change {
  std::uint64_t job_id = 0;
  uid_t job_uid = 0;
  bool makes_production = false;
  /// Per device: the new limit and the one the job started with.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> limits;
};

/// May `caller` act on the job at all (pause, resume, set)?
Status may_act(const Caller& caller, const Policy& policy, std::uint64_t job_id, uid_t job_uid);

/// May `caller` make this change?
Status may_change(const Caller& caller, const Policy& policy, const Change& change);

}  // namespace gpushare::coord::server
