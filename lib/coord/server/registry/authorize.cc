#include "coord/server/registry/authorize.h"

#include <algorithm>

#include "common/units.h"
#include "coord/contract/control_block.h"

namespace gpushare::coord::server {
namespace {

std::string who_may(const Policy& policy) {
  if (policy.admin_gid) return "only root or members of group '" + policy.admin_group_name + "'";
  return "only root";
}

std::string limit_text(std::uint64_t bytes) {
  return bytes == kNoLimit ? "no limit" : format_size(bytes);
}

}  // namespace

bool is_admin(const Caller& caller, const Policy& policy) {
  if (caller.uid == 0) return true;
  if (!policy.admin_gid) return false;
  return caller.gid == *policy.admin_gid || std::find(caller.groups.begin(), caller.groups.end(),
                                                      *policy.admin_gid) != caller.groups.end();
}

Status may_act(const Caller& caller, const Policy& policy, std::uint64_t job_id, uid_t job_uid) {
  if (is_admin(caller, policy) || caller.uid == job_uid) return {};
  return make_error("permission denied: job " + std::to_string(job_id) + " belongs to uid " +
                    std::to_string(job_uid) + ", not to uid " + std::to_string(caller.uid));
}

Status may_change(const Caller& caller, const Policy& policy, const Change& change) {
  if (Status ok = may_act(caller, policy, change.job_id, change.job_uid); !ok) return ok;
  if (is_admin(caller, policy)) return {};
  if (change.makes_production) {
    return make_error("permission denied: " + who_may(policy) + " may make a job production");
  }
  for (const auto& [limit, start] : change.limits) {
    if (limit > start) {
      return make_error("permission denied: " + who_may(policy) +
                        " may raise a memory limit above the one the job started with (" +
                        limit_text(start) + "; asked for " + limit_text(limit) + ")");
    }
  }
  return {};
}

}  // namespace gpushare::coord::server
