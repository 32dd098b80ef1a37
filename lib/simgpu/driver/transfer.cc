// Transfers on the copy path (link.h) and the waits they cause.
//
// Which lanes a transfer takes: host to device, the device's "to" lane;
// device to host, its "from" lane; device to device on one device, its
// local lane (at GPUSHARE_SIM_DTOD_GBPS); between two devices, the
// source's "from" lane and the destination's "to" lane together. Every
// transfer pays GPUSHARE_SIM_PCIE_LATENCY_US once.
//
// Evictions: an allocation that evicts managed memory (state.h's charge)
// reserves the eviction on the device's "from" lane and waits for its end,
// as a real allocation waits while the driver makes room. Managed bytes
// that a prefetch or an eviction is still moving to the host already count
// as free, but an allocation that needs them waits until they have left
// (note_outbound), so capacity is never handed out before the copy that
// frees it could have finished.
#include <sched.h>

#include "simgpu/driver/internal.h"

namespace gpushare::simgpu::driver {
namespace {

thread_local std::int64_t t_deferred_until = 0;
thread_local int t_deferred_depth = 0;  ///< DeferredWait objects alive

bool on_device(int place) { return place >= 0 && place < kMaxDevices; }

}  // namespace

std::int64_t reserve_transfer(StateLayout* layout, int from, int to, std::uint64_t bytes,
                              std::int64_t earliest_ns, bool migration) {
  std::int64_t now = now_ns();
  if (!on_device(from) && !on_device(to)) return earliest_ns > now ? earliest_ns : now;
  const StateHeader& header = layout->header;
  std::uint64_t speed = header.link_bytes_per_s;
  LinkQueue* lanes[2];
  int count = 0;
  if (on_device(from) && from == to) {
    speed = header.local_bytes_per_s;
    lanes[count++] = &layout->devices[from].link.lanes[kLaneLocal];
  } else {
    if (on_device(from)) lanes[count++] = &layout->devices[from].link.lanes[kLaneFromDevice];
    if (on_device(to)) lanes[count++] = &layout->devices[to].link.lanes[kLaneToDevice];
  }
  if (migration && header.migrate_bytes_per_s > 0 && header.migrate_bytes_per_s < speed) {
    speed = header.migrate_bytes_per_s;
  }
  std::int64_t duration = link_duration_ns(bytes, speed, header.link_latency_ns);
  return link_reserve(lanes, count, now, earliest_ns, duration, bytes).end_ns;
}

void note_outbound(StateLayout* layout, int device, std::uint64_t bytes, std::int64_t end_ns) {
  if (!on_device(device) || bytes == 0) return;
  DeviceState& state = layout->devices[device];
  if (state.outbound_end_ns <= now_ns()) state.outbound_bytes = 0;
  state.outbound_bytes += bytes;
  if (end_ns > state.outbound_end_ns) state.outbound_end_ns = end_ns;
}

void defer_wait_until(std::int64_t deadline_ns) {
  if (t_deferred_depth == 0) {
    // No DeferredWait to hand it to (a context's creation evicted managed
    // memory): wait here, holding the process's lock; such evictions are rare.
    if (deadline_ns > now_ns()) sleep_until(deadline_ns);
    return;
  }
  if (deadline_ns > t_deferred_until) t_deferred_until = deadline_ns;
}

void wait_transfer(std::int64_t end_ns) {
  // A sleep overshoots by the thread's timer slack (50 us by default), more
  // than a small copy takes; so the last stretch is waited out yielding.
  constexpr std::int64_t kSlackNs = 100'000;
  if (end_ns - kSlackNs > now_ns()) sleep_until(end_ns - kSlackNs);
  while (now_ns() < end_ns) sched_yield();
}

DeferredWait::DeferredWait() { ++t_deferred_depth; }

DeferredWait::~DeferredWait() {
  if (--t_deferred_depth > 0) return;  // the outermost one waits
  std::int64_t until = t_deferred_until;
  t_deferred_until = 0;
  if (until > now_ns()) sleep_until(until);
}

}  // namespace gpushare::simgpu::driver
