// Waiting for work on the shared scheduler model.
//
// A kernel's end is not known when it is launched: the device's model
// (timeslice.h) settles it as time passes, and another process's later
// launch can still push it back. So a stream or event remembers the
// sequence number of its last kernel (a Ready mark), and every question
// about completion goes to the model under the state lock:
//   - a query settles the model up to now and asks whether the kernel has
//     finished;
//   - a synchronising caller asks when the kernel would end if nothing
//     more were launched (a projection on a copy of the model), sleeps
//     until then without holding any lock, and asks again; it returns once
//     the settled model says the work is done. It never spins: each round
//     sleeps until a time the model computed, which is later than now.
// With collectives waiting for peers on other devices, the projection
// estimates their releases from those devices (collective.h) and is not
// reused: the peers' progress changes it without a launch here.
// The copy a projection needs is large, so there is one per process, used
// only while holding the state lock (which serialises its users), and the
// last projection is reused while no launch has changed the model.
#include "simgpu/driver/internal.h"

namespace gpushare::simgpu::driver {
namespace {

SchedModel g_scratch;
SchedModel g_scratch2;  // a collective's projection needs two

// The last projection: with no launch on the device since (the model's
// next sequence number unchanged), settling it again would give the same
// end, so a stream of asynchronous copies behind one kernel projects once.
// (A process's death since can only make the real end earlier.)
struct Projection {
  int device;
  std::uint64_t seq;
  std::uint64_t next_seq;
  std::int64_t end;
};
Projection g_last_projection{-1, 0, 0, 0};

std::int64_t max64(std::int64_t a, std::int64_t b) { return a > b ? a : b; }

// The end of settled work (-1 while unfinished) on a model settled to now.
std::int64_t settled_end(const SchedModel& model, Ready ready) {
  if (!sched_finished(model, sim().slot, ready.seq)) return -1;
  std::int64_t end = ready.seq == 0 ? 0 : sched_end(model, ready.seq);
  // 0: finished so long ago that its end is no longer kept (or dropped).
  return max64(end < 0 ? 0 : end, ready.floor_ns);
}

}  // namespace

SchedModel& scheduler_scratch() { return g_scratch; }

bool ready_now(int device, Ready ready, CUresult* status) {
  std::int64_t end = ready_time(device, ready, status);
  return end >= 0 && end <= now_ns();
}

std::int64_t ready_time(int device, Ready ready, CUresult* status) {
  *status = CUDA_SUCCESS;
  if (ready.seq == 0) return ready.floor_ns;
  SharedLock shared;
  if (!shared.ok()) {
    *status = kStateUnavailable;
    return -1;
  }
  return settled_end(*settled_model(shared.layout(), device), ready);
}

std::int64_t projected_time(StateLayout* layout, int device, Ready ready) {
  SchedModel* model = settled_model(layout, device);
  std::int64_t end = settled_end(*model, ready);
  if (end >= 0) return end;
  if (sched_has_open_gate(*model)) {  // the peers' devices decide: no reuse
    end = collective_projected_end(layout, device, ready.seq, &g_scratch, &g_scratch2);
    // Unknown (a deadlock, or a table scribbled on): look again a slice on.
    if (end < 0) end = model->now_ns + model->slice_ns;
    return max64(end, ready.floor_ns);
  }
  Projection& last = g_last_projection;
  if (last.device == device && last.seq == ready.seq && last.next_seq == model->next_seq) {
    end = last.end;
  } else {
    end = sched_projected_end(*model, ready.seq, &g_scratch);
    last = Projection{device, ready.seq, model->next_seq, end};
  }
  return max64(end < 0 ? now_ns() : end, ready.floor_ns);
}

CUresult wait_ready(int device, Ready ready) {
  while (true) {
    std::int64_t until;
    bool done;
    if (ready.seq == 0) {
      until = ready.floor_ns;
      done = true;
    } else {
      SharedLock shared;
      if (!shared.ok()) return kStateUnavailable;
      SchedModel* model = settled_model(shared.layout(), device);
      std::int64_t end = settled_end(*model, ready);
      done = end >= 0;
      until = done ? end : projected_time(shared.layout(), device, ready);
    }
    if (until > now_ns()) sleep_until(until);
    if (done) return CUDA_SUCCESS;
  }
}

}  // namespace gpushare::simgpu::driver
