// The batch planner (spill_plan.h).
#include "interpose/memory/spill_plan.h"

#include "vocab/job.h"

namespace gpushare::interpose {

std::size_t choose_spill(const MigrationCandidate* candidates, std::size_t count,
                         std::uint64_t resident, std::uint64_t target, std::size_t* chosen) {
  std::size_t taken = 0;
  for (std::size_t i = 0; i < count && resident > target; ++i) {
    if (candidates[i].on_host) continue;
    chosen[taken++] = i;
    resident = resident > candidates[i].bytes ? resident - candidates[i].bytes : 0;
  }
  return taken;
}

std::size_t choose_restore(const MigrationCandidate* candidates, std::size_t count,
                           std::uint64_t resident, std::uint64_t target, std::uint64_t room,
                           std::size_t* chosen) {
  std::size_t taken = 0;
  for (std::size_t i = 0; i < count; ++i) {
    std::uint64_t bytes = candidates[i].bytes;
    if (!candidates[i].on_host || bytes > room) continue;
    if (target != kNoLimit && (resident + bytes < resident || resident + bytes > target)) continue;
    chosen[taken++] = i;
    resident += bytes;
    room -= bytes;
  }
  return taken;
}

std::size_t plan_batch(const MigrationCandidate* candidates, const std::size_t* chosen,
                       std::size_t count, int streams, MigrationStep* steps, std::size_t capacity) {
  if (capacity < batch_steps(count)) return 0;
  if (streams < 0) streams = 0;
  if (streams > kMigrationStreams) streams = kMigrationStreams;
  std::size_t n = 0;
  if (streams == 0) {
    for (std::size_t i = 0; i < count; ++i) {
      steps[n++] = MigrationStep{StepKind::kAdvise, -1, chosen[i]};
      steps[n++] = MigrationStep{StepKind::kPrefetch, -1, chosen[i]};
    }
    if (count > 0) steps[n++] = MigrationStep{StepKind::kSynchronize, -1, 0};
    return n;
  }
  if (count == 0) return 0;
  steps[n++] = MigrationStep{StepKind::kRecordLegacy, -1, 0};
  for (int s = 0; s < streams; ++s) steps[n++] = MigrationStep{StepKind::kStreamWait, s, 0};
  std::uint64_t load[kMigrationStreams] = {};
  bool used[kMigrationStreams] = {};
  for (std::size_t i = 0; i < count; ++i) {
    int best = 0;
    for (int s = 1; s < streams; ++s) {
      if (load[s] < load[best]) best = s;
    }
    std::uint64_t bytes = candidates[chosen[i]].bytes;
    load[best] = load[best] + bytes < load[best] ? kNoLimit : load[best] + bytes;
    used[best] = true;
    steps[n++] = MigrationStep{StepKind::kAdvise, best, chosen[i]};
    steps[n++] = MigrationStep{StepKind::kPrefetch, best, chosen[i]};
  }
  for (int s = 0; s < streams; ++s) {
    if (used[s]) steps[n++] = MigrationStep{StepKind::kSynchronize, s, 0};
  }
  return n;
}

}  // namespace gpushare::interpose
