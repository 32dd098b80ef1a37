// The time-sliced scheduler model; timeslice.h explains the rules.
#include "simgpu/timeslice.h"

#include <cstring>

namespace gpushare::simgpu {
namespace {

constexpr std::int64_t kForever = INT64_MAX / 4;

std::int64_t min64(std::int64_t a, std::int64_t b) { return a < b ? a : b; }

// Index in pending[] of the context's first (oldest) kernel; -1 when none.
int head_of(const SchedModel* m, int context) {
  for (std::uint32_t i = 0; i < m->pending_count; ++i) {
    if (m->pending[i].context == context) return static_cast<int>(i);
  }
  return -1;
}

// The first context after `after`, wrapping round, that has work; `after`
// itself comes last. -1 when no context has work.
int next_with_work(const SchedModel* m, int after) {
  if (m->pending_count == 0) return -1;
  bool has[kSchedContexts] = {};
  for (std::uint32_t i = 0; i < m->pending_count; ++i) has[m->pending[i].context] = true;
  int start = after < 0 ? 0 : after + 1;
  for (int k = 0; k < kSchedContexts; ++k) {
    int c = (start + k) % kSchedContexts;
    if (has[c]) return c;
  }
  return -1;
}

bool others_have_work(const SchedModel* m, int context) {
  for (std::uint32_t i = 0; i < m->pending_count; ++i) {
    if (m->pending[i].context != context) return true;
  }
  return false;
}

void record_interval(SchedModel* m, int context, std::int64_t start, std::int64_t end) {
  if (end <= start) return;
  m->busy_ns[context] += static_cast<std::uint64_t>(end - start);
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
  m->done_next = (m->done_next + 1) % kSchedDone;
  std::memmove(&m->pending[index], &m->pending[index + 1],
               (m->pending_count - static_cast<std::uint32_t>(index) - 1) * sizeof(SchedKernel));
  --m->pending_count;
}

// Runs the kernel at `index` from now_ns until min(to, its end, limit).
void run_head(SchedModel* m, int index, std::int64_t to, std::int64_t limit) {
  SchedKernel& k = m->pending[index];
  std::int64_t end = min64(min64(to, m->now_ns + k.remaining_ns), limit);
  record_interval(m, k.context, m->now_ns, end);
  k.remaining_ns -= end - m->now_ns;
  m->now_ns = end;
  if (k.remaining_ns == 0) complete(m, index, end);
}

void advance_fifo(SchedModel* m, std::int64_t to) {
  while (m->now_ns < to) {
    if (m->pending_count == 0) {
      m->now_ns = to;
      return;
    }
    m->resident = m->pending[0].context;
    run_head(m, 0, to, kForever);
  }
}

void advance_timeslice(SchedModel* m, std::int64_t to) {
  while (m->now_ns < to) {
    if (m->now_ns < m->switch_end_ns) {  // the device is changing context
      m->now_ns = min64(to, m->switch_end_ns);
      continue;
    }
    int head = m->resident >= 0 ? head_of(m, m->resident) : -1;
    if (head >= 0) {
      if (m->now_ns >= m->slice_end_ns) {
        if (others_have_work(m, m->resident)) {
          int next = next_with_work(m, m->resident);
          ++m->switches;
          m->resident = next;
          m->switch_end_ns = m->now_ns + m->switch_ns;
          m->slice_end_ns = m->switch_end_ns + m->slice_ns;
          continue;
        }
        m->slice_end_ns = m->now_ns + m->slice_ns;  // alone: a fresh slice
      }
      run_head(m, head, to, m->slice_end_ns);
      continue;
    }
    int next = next_with_work(m, m->resident);
    if (next < 0) {  // idle until something is launched
      m->now_ns = to;
      return;
    }
    std::int64_t cost = 0;
    if (m->resident >= 0 && m->resident != next) {
      cost = m->switch_ns;
      ++m->switches;
    }
    m->resident = next;
    m->switch_end_ns = m->now_ns + cost;
    m->slice_end_ns = m->switch_end_ns + m->slice_ns;
  }
}

}  // namespace

void sched_init(SchedModel* model, SchedPolicy policy, std::int64_t slice_ns,
                std::int64_t switch_ns, std::int64_t now_ns) {
  std::memset(model, 0, sizeof(*model));
  model->policy = policy;
  model->resident = -1;
  model->slice_ns = slice_ns > 0 ? slice_ns : 1;
  model->switch_ns = switch_ns > 0 ? switch_ns : 0;
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
                           std::int64_t duration_ns) {
  if (context < 0 || context >= kSchedContexts) return 0;
  sched_advance(model, now_ns);
  std::uint64_t seq = model->next_seq;
  if (duration_ns <= 0) {  // nothing to run: done as soon as it is queued
    // Stream order still holds: it ends when the context's last kernel does.
    if (sched_last_pending(*model, context) == 0) {
      ++model->next_seq;
      model->done[model->done_next] = SchedDone{seq, model->now_ns};
      model->done_next = (model->done_next + 1) % kSchedDone;
      return seq;
    }
    duration_ns = 0;
  }
  if (model->pending_count >= static_cast<std::uint32_t>(kSchedPending)) return 0;
  ++model->next_seq;
  // A zero-length kernel behind others still waits its turn; give it the
  // smallest run the model can express so that it completes in order.
  model->pending[model->pending_count++] =
      SchedKernel{seq, duration_ns > 0 ? duration_ns : 1, context, 0};
  return seq;
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
    sched_advance(scratch, scratch->now_ns + step);
  }
  return end;
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
    if (context >= 0 && iv.context != context) continue;
    std::int64_t a = iv.start_ns > from_ns ? iv.start_ns : from_ns;
    std::int64_t b = min64(iv.end_ns, to_ns);
    if (b > a) total += b - a;
  }
  return total;
}

}  // namespace gpushare::simgpu
