// Collectives across devices; collective.h explains the model.
#include "simgpu/collective.h"

#include <cstring>

#include "simgpu/state.h"

namespace gpushare::simgpu {
namespace {

/// A peer that has not launched its collective yet: its release is
/// estimated this far from now, and a waiter looks again then.
constexpr std::int64_t kUnlaunchedPollNs = 200'000;
constexpr std::uint64_t kMaxCollectiveBytes = 1ull << 40;

std::int64_t max64(std::int64_t a, std::int64_t b) { return a > b ? a : b; }

int device_count(const StateLayout* layout) {
  std::uint32_t count = layout->header.device_count;
  return count >= 1 && count <= static_cast<std::uint32_t>(kMaxDevices) ? static_cast<int>(count)
                                                                         : 1;
}

std::uint32_t world_of(const CollectiveGroup& group) {
  return group.world_size <= static_cast<std::uint32_t>(kCollectiveRanks) ? group.world_size : 0;
}

bool valid_device(std::int32_t device) { return device >= 0 && device < kMaxDevices; }
bool valid_slot(std::int32_t slot) { return slot >= 0 && slot < kSchedContexts; }

// The op's group, or nullptr when its index is out of range.
CollectiveGroup* group_of(StateLayout* layout, const CollectiveOp& op) {
  std::uint32_t index = op.group_plus1 - 1;
  if (op.group_plus1 == 0 || index >= static_cast<std::uint32_t>(kCollectiveGroups)) {
    return nullptr;
  }
  return &layout->collectives.groups[index];
}

// The unfinished kernel `seq` on a model, or nullptr.
SchedKernel* pending_kernel(SchedModel* model, std::uint64_t seq) {
  std::uint32_t count = model->pending_count <= static_cast<std::uint32_t>(kSchedPending)
                            ? model->pending_count
                            : 0;
  for (std::uint32_t i = 0; i < count; ++i) {
    if (model->pending[i].seq == seq) return &model->pending[i];
  }
  return nullptr;
}

void free_op(CollectiveTable* table, CollectiveOp* op) {
  std::memset(op, 0, sizeof *op);
  if (table->open_ops > 0) --table->open_ops;
}

// Sets the op's release on every launched rank's kernel.
void release_op(StateLayout* layout, CollectiveOp* op, std::uint32_t world, std::int64_t release) {
  op->release_ns = release;
  for (std::uint32_t r = 0; r < world; ++r) {
    if (op->seq[r] == 0 || !valid_device(op->device[r])) continue;
    sched_release(&layout->devices[op->device[r]].sched, op->seq[r], release, 0);
  }
}

// What the devices' models have settled about one op; true when something
// was learnt (a start or the release).
bool publish_op(StateLayout* layout, CollectiveOp* op, std::int64_t to) {
  CollectiveTable* table = &layout->collectives;
  CollectiveGroup* group = group_of(layout, *op);
  std::uint32_t world = group != nullptr ? world_of(*group) : 0;
  if (group == nullptr || world == 0) {  // scribbled on: drop it
    free_op(table, op);
    return false;
  }
  bool learnt = false;
  bool all_started = true;
  bool all_launched = true;
  std::int64_t latest = -1;
  std::int32_t last_rank = -1;
  bool tie = false;
  std::int64_t bound = 0;  // the release is not before this
  for (std::uint32_t r = 0; r < world; ++r) {
    if (op->seq[r] == 0 && (group->ended & (1u << r)) != 0) continue;  // never will
    if (op->seq[r] == 0) {  // not launched: it starts after now
      all_started = all_launched = false;
      bound = max64(bound, to);
      continue;
    }
    if (!valid_device(op->device[r])) {
      all_started = false;
      continue;
    }
    SchedModel* model = &layout->devices[op->device[r]].sched;
    if (op->start_ns[r] < 0) {
      SchedKernel* kernel = pending_kernel(model, op->seq[r]);
      if (kernel != nullptr && kernel->started_ns >= 0) {
        op->start_ns[r] = kernel->started_ns;
        learnt = true;
      }
    }
    if (op->start_ns[r] < 0 && (group->ended & (1u << r)) != 0 &&
        pending_kernel(model, op->seq[r]) == nullptr) {
      continue;  // it exited with its kernel unrun
    }
    if (op->start_ns[r] < 0) {
      all_started = false;
      bound = max64(bound, model->now_ns);  // it has not started by its device's clock
      continue;
    }
    bound = max64(bound, op->start_ns[r]);
    if (op->start_ns[r] > latest) {
      latest = op->start_ns[r];
      last_rank = static_cast<std::int32_t>(r);
      tie = false;
    } else if (op->start_ns[r] == latest) {
      tie = true;  // started together: nobody waited for a last one
    }
  }
  if (op->release_ns < 0) {
    if (all_started && last_rank >= 0) {
      release_op(layout, op, world, latest);
      for (std::uint32_t r = 0; r < world; ++r) {
        if (op->start_ns[r] >= 0) {
          group->waited_ns[r] += static_cast<std::uint64_t>(latest - op->start_ns[r]);
        }
      }
      if (!tie) ++group->last_count[last_rank];
      ++group->released;
      group->last_rank = tie ? -1 : last_rank;
      learnt = true;
    } else if (group->broken != 0) {  // a rank died: nobody is coming
      release_op(layout, op, world, max64(bound, to));
      learnt = true;
    } else {
      for (std::uint32_t r = 0; r < world; ++r) {
        if (op->start_ns[r] < 0 || !valid_device(op->device[r])) continue;
        sched_release(&layout->devices[op->device[r]].sched, op->seq[r], -1, bound);
      }
    }
  }
  // Done when every rank launched it (or never will) and all have finished.
  if (op->release_ns >= 0 && (all_launched || group->broken != 0 || group->ended != 0)) {
    bool finished = true;
    for (std::uint32_t r = 0; r < world && finished; ++r) {
      if (op->seq[r] == 0 || !valid_device(op->device[r]) || !valid_slot(op->slot[r])) continue;
      finished = sched_finished(layout->devices[op->device[r]].sched, op->slot[r], op->seq[r]);
    }
    if (finished) free_op(table, op);
  }
  return learnt;
}

// A rank's group for `call`, registering the rank; nullptr and a refusal
// when it may not join.
CollectiveGroup* join(CollectiveTable* table, const CollectiveCall& call, int slot,
                      std::int32_t pid, CollectiveRefusal* refusal) {
  CollectiveGroup* free_group = nullptr;
  for (CollectiveGroup& group : table->groups) {
    if (group.comm == 0) {
      if (free_group == nullptr) free_group = &group;
      continue;
    }
    if (group.comm != call.comm) continue;
    bool members = false;
    for (std::int32_t member : group.pid) members = members || member != 0;
    if (!members) {  // a finished run's communicator: start afresh
      for (CollectiveOp& op : table->ops) {
        if (op.group_plus1 == static_cast<std::uint32_t>(&group - table->groups) + 1) {
          free_op(table, &op);
        }
      }
      std::memset(&group, 0, sizeof group);
      free_group = &group;
      break;
    }
    if (group.world_size != call.world_size) {
      *refusal = CollectiveRefusal::kMismatch;
      return nullptr;
    }
    if (group.broken != 0) {
      *refusal = CollectiveRefusal::kBroken;
      return nullptr;
    }
    std::int32_t member = group.pid[call.rank];
    if (member != 0 && (member != pid || group.slot[call.rank] != slot)) {
      *refusal = CollectiveRefusal::kRankTaken;
      return nullptr;
    }
    return &group;
  }
  if (free_group == nullptr) {
    *refusal = CollectiveRefusal::kTableFull;
    return nullptr;
  }
  std::memset(free_group, 0, sizeof *free_group);
  free_group->comm = call.comm;
  free_group->world_size = call.world_size;
  free_group->last_rank = -1;
  return free_group;
}

// The op that is the group's `number`-th collective, or a free one for it
// (not yet claimed); nullptr when none is free.
CollectiveOp* op_for(CollectiveTable* table, std::uint32_t group_plus1, std::uint64_t number,
                     bool* fresh) {
  CollectiveOp* free_op_slot = nullptr;
  for (CollectiveOp& op : table->ops) {
    if (op.group_plus1 == group_plus1 && op.number == number) {
      *fresh = false;
      return &op;
    }
    if (op.group_plus1 == 0 && free_op_slot == nullptr) free_op_slot = &op;
  }
  *fresh = true;
  return free_op_slot;
}

}  // namespace

std::int64_t collective_transfer_ns(const CollectiveTable& table, std::uint64_t bytes,
                                    std::uint32_t world_size) {
  std::int64_t latency = table.link_latency_ns > 0 ? table.link_latency_ns : 0;
  if (world_size <= 1 || table.link_bytes_per_s == 0) return latency > 0 ? latency : 1;
  double moved = 2.0 * static_cast<double>(world_size - 1) / static_cast<double>(world_size) *
                 static_cast<double>(bytes);
  std::int64_t ns =
      latency + static_cast<std::int64_t>(moved * 1e9 / static_cast<double>(table.link_bytes_per_s));
  return ns > 0 ? ns : 1;
}

std::uint64_t collective_enqueue(StateLayout* layout, const CollectiveCall& call, int slot,
                                 std::int32_t pid, int device, std::int64_t now_ns,
                                 std::int64_t not_before_ns, CollectiveRefusal* refusal) {
  *refusal = CollectiveRefusal::kNone;
  CollectiveTable* table = &layout->collectives;
  if (call.comm == 0 || call.world_size < 1 ||
      call.world_size > static_cast<std::uint32_t>(kCollectiveRanks) ||
      call.rank >= call.world_size || call.bytes > kMaxCollectiveBytes || !valid_slot(slot) ||
      !valid_device(device)) {
    *refusal = CollectiveRefusal::kBadCall;
    return 0;
  }
  CollectiveGroup* group = join(table, call, slot, pid, refusal);
  if (group == nullptr) return 0;
  std::uint32_t group_plus1 = static_cast<std::uint32_t>(group - table->groups) + 1;
  bool fresh = false;
  CollectiveOp* op = op_for(table, group_plus1, group->launched[call.rank] + 1, &fresh);
  if (op == nullptr) {
    *refusal = CollectiveRefusal::kTableFull;
    return 0;
  }
  if (!fresh && op->bytes != call.bytes) {
    *refusal = CollectiveRefusal::kMismatch;
    return 0;
  }
  std::int64_t transfer = collective_transfer_ns(*table, call.bytes, call.world_size);
  SchedModel* model = &layout->devices[device].sched;
  // Not before the moment of the launch, even on a model whose clock is
  // behind (a collective_settle stopped short): the settling's bound for
  // a peer that has not launched yet relies on it.
  std::int64_t floor = max64(not_before_ns, now_ns);
  std::uint64_t seq = sched_launch(model, slot, model->now_ns, transfer, floor, 0);
  if (seq == 0) {
    *refusal = CollectiveRefusal::kQueueFull;
    return 0;
  }
  if (fresh) {
    std::memset(op, 0, sizeof *op);
    op->group_plus1 = group_plus1;
    op->number = group->launched[call.rank] + 1;
    op->bytes = call.bytes;
    op->transfer_ns = transfer;
    op->release_ns = -1;
    for (std::int64_t& start : op->start_ns) start = -1;
    ++table->open_ops;
  }
  sched_gate(model, seq, static_cast<std::uint32_t>(op - table->ops) + 1);
  op->seq[call.rank] = seq;
  op->start_ns[call.rank] = -1;
  op->device[call.rank] = device;
  op->slot[call.rank] = slot;
  ++group->launched[call.rank];
  group->pid[call.rank] = pid;
  group->slot[call.rank] = slot;
  group->device[call.rank] = device;
  return seq;
}

void collective_settle(StateLayout* layout, std::int64_t to_ns) {
  CollectiveTable* table = &layout->collectives;
  int devices = device_count(layout);
  // Each round either moves a clock or learns a start or release; a
  // handful is the usual, the cap only guards against a scribbled table.
  for (int round = 0; round < 64 * kMaxDevices; ++round) {
    bool moved = false, behind = false;
    for (int d = 0; d < devices; ++d) {
      SchedModel* model = &layout->devices[d].sched;
      std::int64_t before = model->now_ns;
      sched_advance(model, to_ns);
      moved = moved || model->now_ns != before;
      behind = behind || model->now_ns < to_ns;
    }
    bool learnt = false;
    for (CollectiveOp& op : table->ops) {
      if (op.group_plus1 != 0) learnt = publish_op(layout, &op, to_ns) || learnt;
    }
    if (!behind || (!moved && !learnt)) break;
  }
}

void collective_forget_slot(StateLayout* layout, int slot, std::int64_t now_ns) {
  CollectiveTable* table = &layout->collectives;
  for (int g = 0; g < kCollectiveGroups; ++g) {
    CollectiveGroup& group = table->groups[g];
    if (group.comm == 0) continue;
    bool member = false, others = false;
    for (int r = 0; r < kCollectiveRanks; ++r) {
      if (group.pid[r] != 0 && group.slot[r] == slot) {
        member = true;
        group.pid[r] = 0;
      } else if (group.pid[r] != 0) {
        others = true;
      }
    }
    if (!member) continue;
    group.broken = 1;
    std::uint32_t world = world_of(group);
    for (CollectiveOp& op : table->ops) {
      if (op.group_plus1 != static_cast<std::uint32_t>(g) + 1) continue;
      if (!others) {  // nobody left to wait: the ops go with the group
        free_op(table, &op);
        continue;
      }
      if (op.release_ns < 0) release_op(layout, &op, world, now_ns);
    }
    if (!others) std::memset(&group, 0, sizeof group);
  }
}

void collective_leave(StateLayout* layout, int slot) {
  CollectiveTable* table = &layout->collectives;
  for (int g = 0; g < kCollectiveGroups; ++g) {
    CollectiveGroup& group = table->groups[g];
    if (group.comm == 0) continue;
    bool others = false;
    for (int r = 0; r < kCollectiveRanks; ++r) {
      if (group.pid[r] != 0 && group.slot[r] == slot) {
        group.pid[r] = 0;
        group.ended |= 1u << r;
      } else if (group.pid[r] != 0) {
        others = true;
      }
    }
    if (others) continue;
    for (CollectiveOp& op : table->ops) {
      if (op.group_plus1 == static_cast<std::uint32_t>(g) + 1) free_op(table, &op);
    }
    std::memset(&group, 0, sizeof group);
  }
}

std::int64_t collective_projected_end(StateLayout* layout, int device, std::uint64_t seq,
                                      SchedModel* scratch, SchedModel* scratch2) {
  SchedModel* model = &layout->devices[device].sched;
  if (!sched_has_open_gate(*model)) return sched_projected_end(*model, seq, scratch);
  std::int64_t now = model->now_ns;
  std::memcpy(scratch, model, sizeof *model);
  for (std::uint32_t i = 0; i < scratch->pending_count; ++i) {
    SchedKernel& kernel = scratch->pending[i];
    if (kernel.gate == 0 || kernel.release_ns >= 0) continue;
    std::int64_t estimate = now + kUnlaunchedPollNs;
    std::uint32_t index = kernel.gate - 1;
    CollectiveOp* op = index < static_cast<std::uint32_t>(kCollectiveOps)
                           ? &layout->collectives.ops[index]
                           : nullptr;
    CollectiveGroup* group = op != nullptr ? group_of(layout, *op) : nullptr;
    if (group != nullptr) {
      estimate = now;
      for (std::uint32_t r = 0; r < world_of(*group); ++r) {
        if (op->seq[r] == 0 && (group->ended & (1u << r)) != 0) continue;  // exited
        if (op->seq[r] == 0 || !valid_device(op->device[r]) || !valid_slot(op->slot[r])) {
          estimate = max64(estimate, now + kUnlaunchedPollNs);
        } else if (op->start_ns[r] >= 0) {
          estimate = max64(estimate, op->start_ns[r]);
        } else if (op->device[r] != device || op->slot[r] != kernel.context) {
          // A peer's: it starts when its context's kernel before it ends
          // (at its next turn, if none), as far as its device can tell now.
          SchedModel* peer = &layout->devices[op->device[r]].sched;
          std::uint64_t before = 0;
          for (std::uint32_t j = 0; j < peer->pending_count; ++j) {
            const SchedKernel& k = peer->pending[j];
            if (k.context == op->slot[r] && k.seq < op->seq[r]) before = k.seq;
          }
          std::int64_t start = before == 0 ? peer->now_ns
                                           : sched_projected_end(*peer, before, scratch2);
          estimate = max64(estimate, start >= 0 ? start : now + kUnlaunchedPollNs);
        }
      }
    }
    kernel.release_ns = estimate;
  }
  return sched_projected_end(*scratch, seq, scratch2);
}

bool collective_valid(const CollectiveTable& table) {
  if (table.open_ops > static_cast<std::uint32_t>(kCollectiveOps)) return false;
  for (const CollectiveGroup& group : table.groups) {
    if (group.comm != 0 && (group.world_size < 1 ||
                            group.world_size > static_cast<std::uint32_t>(kCollectiveRanks) ||
                            group.last_rank < -1 || group.last_rank >= kCollectiveRanks)) {
      return false;
    }
  }
  for (const CollectiveOp& op : table.ops) {
    if (op.group_plus1 > static_cast<std::uint32_t>(kCollectiveGroups)) return false;
    for (int r = 0; r < kCollectiveRanks; ++r) {
      if (op.seq[r] != 0 && (!valid_device(op.device[r]) || !valid_slot(op.slot[r]))) return false;
    }
  }
  return true;
}

}  // namespace gpushare::simgpu
