// The time-sliced scheduler model; timeslice.h explains the rules.
#include "simgpu/timeslice.h"

#include <cstring>

namespace gpushare::simgpu {
namespace {

constexpr std::int64_t kForever = INT64_MAX / 4;

std::int64_t min64(std::int64_t a, std::int64_t b) { return a < b ? a : b; }

// Index in pending[] of the context's first (oldest) kernel when it may
// run now; -1 when the context has none, or its head must wait.
int head_of(const SchedModel* m, int context) {
  for (std::uint32_t i = 0; i < m->pending_count; ++i) {
    if (m->pending[i].context == context) {
      return m->pending[i].not_before_ns <= m->now_ns ? static_cast<int>(i) : -1;
    }
  }
  return -1;
}

// Which contexts have a head kernel that may run now.
void runnable(const SchedModel* m, bool has[kSchedContexts]) {
  bool seen[kSchedContexts] = {};
  for (std::uint32_t i = 0; i < m->pending_count; ++i) {
    const SchedKernel& k = m->pending[i];
    if (seen[k.context]) continue;
    seen[k.context] = true;
    has[k.context] = k.not_before_ns <= m->now_ns;
  }
}

// The first context after `after`, wrapping round, that has runnable work;
// `after` itself comes last. -1 when no context has.
int next_with_work(const SchedModel* m, int after) {
  if (m->pending_count == 0) return -1;
  bool has[kSchedContexts] = {};
  runnable(m, has);
  int start = after < 0 ? 0 : after + 1;
  for (int k = 0; k < kSchedContexts; ++k) {
    int c = (start + k) % kSchedContexts;
    if (has[c]) return c;
  }
  return -1;
}

bool others_have_work(const SchedModel* m, int context) {
  bool has[kSchedContexts] = {};
  runnable(m, has);
  for (int c = 0; c < kSchedContexts; ++c) {
    if (has[c] && c != context) return true;
  }
  return false;
}

// The earliest time a waiting head kernel may start (kForever when none
// waits): the device is idle until then unless something is launched.
std::int64_t next_release(const SchedModel* m) {
  std::int64_t earliest = kForever;
  bool seen[kSchedContexts] = {};
  for (std::uint32_t i = 0; i < m->pending_count; ++i) {
    const SchedKernel& k = m->pending[i];
    if (seen[k.context]) continue;
    seen[k.context] = true;
    if (k.not_before_ns > m->now_ns) earliest = min64(earliest, k.not_before_ns);
  }
  return earliest;
}

void record_interval(SchedModel* m, int context, std::int64_t start, std::int64_t end) {
  if (end <= start) return;
  m->busy_ns[context] += static_cast<std::uint64_t>(end - start);
  m->busy_total_ns += static_cast<std::uint64_t>(end - start);
  if (m->interval_count > 0) {
    std::uint32_t last = (m->interval_next + kSchedIntervals - 1) % kSchedIntervals;
    SchedInterval& prev = m->intervals[last];
    if (prev.context == context && prev.end_ns == start) {  // one stretch, not many
      prev.end_ns = end;
      return;
    }
  }
  m->intervals[m->interval_next] = SchedInterval{start, end, context, 0};
  m->interval_next = (m->interval_next + 1) % kSchedIntervals;
  if (m->interval_count < kSchedIntervals) ++m->interval_count;
}

void complete(SchedModel* m, int index, std::int64_t end) {
  m->done[m->done_next] = SchedDone{m->pending[index].seq, end};
  --m->pending_of[m->pending[index].context];
  m->done_next = (m->done_next + 1) % kSchedDone;
  std::memmove(&m->pending[index], &m->pending[index + 1],
               (m->pending_count - static_cast<std::uint32_t>(index) - 1) * sizeof(SchedKernel));
  --m->pending_count;
}

// A gated kernel before its release: spins (busy, duration untouched)
// until min(to, limit, its release or wait bound). False, changing
// nothing, when its release is unknown and the clock is at its bound.
bool spin_gated(SchedModel* m, SchedKernel& k, std::int64_t to, std::int64_t limit) {
  std::int64_t until = k.release_ns >= 0 ? k.release_ns : k.wait_bound_ns;
  std::int64_t end = min64(min64(to, limit), until);
  if (end <= m->now_ns) return false;
  record_interval(m, k.context, m->now_ns, end);
  m->now_ns = end;
  return true;
}

// Runs the kernel at `index` from now_ns until min(to, its end, limit).
// False when it is a gated kernel that may not run on yet (spin_gated).
bool run_head(SchedModel* m, int index, std::int64_t to, std::int64_t limit) {
  SchedKernel& k = m->pending[index];
  if (k.gate != 0) {
    if (k.started_ns < 0) {  // its first run: the caller publishes the start first
      k.started_ns = m->now_ns;
      if (k.release_ns < 0) return false;
    }
    // Released before it started (the last of its peers): the transfer
    // runs from its start.
    if (k.release_ns < 0 || m->now_ns < k.release_ns) return spin_gated(m, k, to, limit);
  }
  std::int64_t end = min64(min64(to, m->now_ns + k.remaining_ns), limit);
  record_interval(m, k.context, m->now_ns, end);
  std::int64_t ran = end - m->now_ns;
  k.hold_ns = ran >= k.hold_ns ? 0 : k.hold_ns - static_cast<std::uint32_t>(ran);
  k.remaining_ns -= ran;
  m->now_ns = end;
  if (k.remaining_ns == 0) complete(m, index, end);
  return true;
}

void advance_fifo(SchedModel* m, std::int64_t to) {
  while (m->now_ns < to) {
    if (m->pending_count == 0) {
      m->now_ns = to;
      return;
    }
    if (m->pending[0].not_before_ns > m->now_ns) {  // the queue waits for its head
      m->now_ns = min64(to, m->pending[0].not_before_ns);
      continue;
    }
    m->resident = m->pending[0].context;
    if (!run_head(m, 0, to, kForever)) return;  // a collective waits for its peers
  }
}

// A context switched in from another finds its data gone from the caches:
// its head kernel runs cold_ns longer (timeslice.h).
void run_cold(SchedModel* m, int context) {
  int head = head_of(m, context);
  if (head >= 0 && m->cold_ns > 0) m->pending[head].remaining_ns += m->cold_ns;
}

void advance_timeslice(SchedModel* m, std::int64_t to) {
  while (m->now_ns < to) {
    if (m->now_ns < m->switch_end_ns) {  // the device is changing context
      m->now_ns = min64(to, m->switch_end_ns);
      continue;
    }
    int head = m->resident >= 0 ? head_of(m, m->resident) : -1;
    if (head >= 0) {
      if (m->now_ns >= m->slice_end_ns && m->pending[head].hold_ns > 0) {
        m->slice_end_ns = m->now_ns + m->pending[head].hold_ns;  // stalled on faults
      }
      if (m->now_ns >= m->slice_end_ns) {
        if (others_have_work(m, m->resident)) {
          int next = next_with_work(m, m->resident);
          ++m->switches;
          m->resident = next;
          m->switch_end_ns = m->now_ns + m->switch_ns;
          m->slice_end_ns = m->switch_end_ns + m->slice_ns;
          run_cold(m, next);
          continue;
        }
        m->slice_end_ns = m->now_ns + m->slice_ns;  // alone: a fresh slice
      }
      if (!run_head(m, head, to, m->slice_end_ns)) return;  // a collective waits for its peers
      continue;
    }
    int next = next_with_work(m, m->resident);
    if (next < 0) {  // idle until a waiting kernel may start, or a launch
      m->now_ns = min64(to, next_release(m));
      continue;
    }
    std::int64_t cost = 0;
    bool switched = m->resident >= 0 && m->resident != next;
    if (switched) {
      cost = m->switch_ns;
      ++m->switches;
    }
    m->resident = next;
    if (switched) run_cold(m, next);
    m->switch_end_ns = m->now_ns + cost;
    m->slice_end_ns = m->switch_end_ns + m->slice_ns;
  }
}

}  // namespace

void sched_init(SchedModel* model, SchedPolicy policy, std::int64_t slice_ns,
                std::int64_t switch_ns, std::int64_t now_ns, std::int64_t cold_ns) {
  std::memset(model, 0, sizeof(*model));
  model->policy = policy;
  model->resident = -1;
  model->slice_ns = slice_ns > 0 ? slice_ns : 1;
  model->switch_ns = switch_ns > 0 ? switch_ns : 0;
  model->cold_ns = cold_ns > 0 ? cold_ns : 0;
  model->now_ns = now_ns;
  model->next_seq = 1;
}

void sched_advance(SchedModel* model, std::int64_t to_ns) {
  if (to_ns <= model->now_ns) return;
  if (model->policy == SchedPolicy::kFifo) {
    advance_fifo(model, to_ns);
  } else {
    advance_timeslice(model, to_ns);
  }
}

std::uint64_t sched_launch(SchedModel* model, int context, std::int64_t now_ns,
                           std::int64_t duration_ns, std::int64_t not_before_ns,
                           std::uint32_t hold_ns) {
  if (context < 0 || context >= kSchedContexts) return 0;
  sched_advance(model, now_ns);
  std::uint64_t seq = model->next_seq;
  if (duration_ns <= 0) {  // nothing to run: done as soon as it is queued
    // Stream order still holds: it ends when the context's last kernel does.
    if (sched_last_pending(*model, context) == 0 && not_before_ns <= model->now_ns) {
      ++model->next_seq;
      ++model->kernels;
      model->done[model->done_next] = SchedDone{seq, model->now_ns};
      model->done_next = (model->done_next + 1) % kSchedDone;
      return seq;
    }
    duration_ns = 0;
  }
  if (model->pending_count >= static_cast<std::uint32_t>(kSchedPending) ||
      model->pending_of[context] >= static_cast<std::uint32_t>(kSchedContextPending)) {
    return 0;
  }
  ++model->pending_of[context];
  ++model->next_seq;
  ++model->kernels;
  // A zero-length kernel behind others still waits its turn; give it the
  // smallest run the model can express so that it completes in order.
  std::int64_t duration = duration_ns > 0 ? duration_ns : 1;
  if (hold_ns > duration) hold_ns = static_cast<std::uint32_t>(duration);
  model->pending[model->pending_count++] =
      SchedKernel{seq, duration, not_before_ns, context, hold_ns, 0, 0, -1, -1, 0};
  return seq;
}

bool sched_gate(SchedModel* model, std::uint64_t seq, std::uint32_t gate) {
  for (std::uint32_t i = 0; i < model->pending_count; ++i) {
    SchedKernel& k = model->pending[i];
    if (k.seq != seq) continue;
    if (gate == 0 || k.started_ns >= 0) return false;
    k.gate = gate;
    k.hold_ns = 0;
    return true;
  }
  return false;
}

bool sched_release(SchedModel* model, std::uint64_t seq, std::int64_t release_ns,
                   std::int64_t wait_bound_ns) {
  for (std::uint32_t i = 0; i < model->pending_count; ++i) {
    SchedKernel& k = model->pending[i];
    if (k.seq != seq) continue;
    if (k.gate == 0) return false;
    if (release_ns >= 0) {
      k.release_ns = release_ns;
    } else if (k.release_ns < 0 && wait_bound_ns > k.wait_bound_ns) {
      k.wait_bound_ns = wait_bound_ns;
    }
    return true;
  }
  return false;
}

bool sched_has_open_gate(const SchedModel& model) {
  for (std::uint32_t i = 0; i < model.pending_count; ++i) {
    if (model.pending[i].gate != 0 && model.pending[i].release_ns < 0) return true;
  }
  return false;
}

void sched_drop(SchedModel* model, int context) {
  if (context < 0 || context >= kSchedContexts) return;
  std::uint32_t kept = 0;
  for (std::uint32_t i = 0; i < model->pending_count; ++i) {
    if (model->pending[i].context != context) model->pending[kept++] = model->pending[i];
  }
  model->pending_count = kept;
  model->pending_of[context] = 0;
  model->busy_ns[context] = 0;
  for (SchedInterval& interval : model->intervals) {
    if (interval.context == context) interval.context = -1;
  }
}

bool sched_valid(const SchedModel& model) {
  if (model.pending_count > static_cast<std::uint32_t>(kSchedPending) ||
      model.done_next >= static_cast<std::uint32_t>(kSchedDone) ||
      model.interval_next >= static_cast<std::uint32_t>(kSchedIntervals) ||
      model.interval_count > static_cast<std::uint32_t>(kSchedIntervals) || model.resident < -1 ||
      model.resident >= kSchedContexts || model.slice_ns <= 0 || model.switch_ns < 0 || model.cold_ns < 0 ||
      (model.policy != SchedPolicy::kTimeslice && model.policy != SchedPolicy::kFifo)) {
    return false;
  }
  std::uint32_t count[kSchedContexts] = {};
  for (std::uint32_t i = 0; i < model.pending_count; ++i) {
    const SchedKernel& k = model.pending[i];
    if (k.context < 0 || k.context >= kSchedContexts || k.remaining_ns <= 0) return false;
    ++count[k.context];
  }
  for (int c = 0; c < kSchedContexts; ++c) {
    if (count[c] != model.pending_of[c]) return false;
  }
  return true;
}

std::int64_t sched_end(const SchedModel& model, std::uint64_t seq) {
  for (std::uint32_t i = 0; i < model.pending_count; ++i) {
    if (model.pending[i].seq == seq) return -1;
  }
  for (int i = 0; i < kSchedDone; ++i) {
    if (model.done[i].seq == seq) return model.done[i].end_ns;
  }
  return seq < model.next_seq ? 0 : -1;
}

std::int64_t sched_projected_end(const SchedModel& model, std::uint64_t seq, SchedModel* scratch) {
  std::int64_t end = sched_end(model, seq);
  if (end >= 0) return end;
  std::memcpy(scratch, &model, sizeof(model));
  // Settle in steps: the model has finished everything pending within
  // (pending work + a switch per kernel) of its clock, so this ends.
  std::int64_t step = scratch->slice_ns * 64 + scratch->switch_ns * 64;
  while ((end = sched_end(*scratch, seq)) < 0 && scratch->pending_count > 0) {
    std::int64_t before = scratch->now_ns;
    sched_advance(scratch, scratch->now_ns + step);
    if (scratch->now_ns == before) return -1;  // a collective's release is unknown
  }
  return end;
}

bool sched_finished(const SchedModel& model, int context, std::uint64_t seq) {
  if (seq == 0) return true;
  if (seq >= model.next_seq) return false;
  for (std::uint32_t i = 0; i < model.pending_count; ++i) {
    if (model.pending[i].context == context) return model.pending[i].seq > seq;
  }
  return true;
}

std::int64_t sched_next_completion(const SchedModel& model, SchedModel* scratch) {
  if (model.pending_count == 0) return -1;
  std::memcpy(scratch, &model, sizeof(model));
  std::uint32_t count = scratch->pending_count;
  std::uint32_t first = scratch->done_next;  // ends are recorded in time order
  while (scratch->pending_count == count) {
    std::int64_t before = scratch->now_ns;
    sched_advance(scratch, scratch->now_ns + scratch->slice_ns + scratch->switch_ns);
    if (scratch->now_ns == before) return -1;  // a collective's release is unknown
  }
  return scratch->done[first].end_ns;
}

std::uint64_t sched_first_pending(const SchedModel& model, int context) {
  for (std::uint32_t i = 0; i < model.pending_count; ++i) {
    if (model.pending[i].context == context) return model.pending[i].seq;
  }
  return 0;
}

std::uint64_t sched_last_pending(const SchedModel& model, int context) {
  for (std::uint32_t i = model.pending_count; i > 0; --i) {
    if (model.pending[i - 1].context == context) return model.pending[i - 1].seq;
  }
  return 0;
}

std::int64_t sched_busy_between(const SchedModel& model, std::int64_t from_ns, std::int64_t to_ns,
                                int context) {
  std::int64_t total = 0;
  for (std::uint32_t k = 0; k < model.interval_count; ++k) {
    std::uint32_t i = (model.interval_next + kSchedIntervals - 1 - k) % kSchedIntervals;
    const SchedInterval& iv = model.intervals[i];
    if (iv.end_ns <= from_ns) break;  // older ones end earlier still
    if (context >= 0 && iv.context != context) continue;
    std::int64_t a = iv.start_ns > from_ns ? iv.start_ns : from_ns;
    std::int64_t b = min64(iv.end_ns, to_ns);
    if (b > a) total += b - a;
  }
  return total;
}

}  // namespace gpushare::simgpu
