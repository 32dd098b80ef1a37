// The owner of a job's limits (limits.h): the fallbacks kept while
// unregistered and every read of the limit in force. No libstdc++: libc and
// atomics only, no allocation.
#include "coord/job/limits.h"

#include <limits.h>
#include <linux/futex.h>
#include <time.h>

#include "coord/job/client_state.h"

namespace gpushare::coord::job {

// The registered page (null while unregistered), read by the launch path.
constinit LaunchGate g_launch_gate{};

namespace {

// The limits the job runs on while unregistered. Limits are stored inverted
// (~limit), so that the zero-initialised state reads as kNoLimit before the
// interposer sets them.
struct Fallbacks {
  std::atomic<std::uint64_t> start_limit_inverted[kMaxDevices];
  std::atomic<std::uint64_t> limit_inverted[kMaxDevices];
  std::atomic<std::uint32_t> qos;
  std::atomic<std::uint64_t> budget_inverted[kMaxDevices];
  std::atomic<std::uint64_t> window_ns[kMaxDevices];
  std::atomic<std::uint64_t> queued_inverted[kMaxDevices];
  std::atomic<std::uint64_t> cap_inverted[kMaxDevices];
  std::atomic<std::uint64_t> yield_mask[kMaxDevices];
  std::atomic<std::uint64_t> share_inverted[kMaxDevices];
};
constinit Fallbacks g_fallbacks{};

// The asked-for limit, written once at load before any thread reads it.
constinit SizeSpec g_request{};
constinit bool g_has_request = false;

bool valid(int device) { return device >= 0 && device < kMaxDevices; }

std::uint64_t load_inverted(const std::atomic<std::uint64_t>& word) {
  return ~word.load(std::memory_order_relaxed);
}

void store_inverted(std::atomic<std::uint64_t>& word, std::uint64_t value) {
  word.store(~value, std::memory_order_relaxed);
}

void set_fallback_compute(int device, const ComputeLimits& c) {
  g_fallbacks.window_ns[device].store(c.launch_window_ns, std::memory_order_relaxed);
  store_inverted(g_fallbacks.budget_inverted[device], c.launch_budget);
  store_inverted(g_fallbacks.queued_inverted[device], c.max_queued);
  store_inverted(g_fallbacks.cap_inverted[device], c.compute_cap_ppm);
  g_fallbacks.yield_mask[device].store(c.yield_mask, std::memory_order_relaxed);
  store_inverted(g_fallbacks.share_inverted[device], c.yield_share_ppm);
}

// The registered page when it holds `device`, else null.
const LimitsPage* page_for(int device) {
  const LimitsPage* page = g_launch_gate.page.load(std::memory_order_acquire);
  if (page == nullptr || device >= static_cast<int>(page->device_count)) return nullptr;
  return page;
}

}  // namespace

namespace client_detail {

void start_own_limits(Qos qos, std::uint64_t compute_cap_ppm, int device_count) {
  g_fallbacks.qos.store(qos, std::memory_order_relaxed);
  for (int i = 0; i < device_count && i < kMaxDevices; ++i) {
    ComputeLimits own;
    own.compute_cap_ppm = compute_cap_ppm;
    set_fallback_compute(i, own);
  }
  g_launch_gate.fallback_throttle.store(compute_cap_ppm != kNoLimit ? 1 : 0,
                                        std::memory_order_relaxed);
}

void keep_page_limits(const LimitsPage* page, int device_count) {
  for (int i = 0; i < device_count && i < kMaxDevices; ++i) {
    store_inverted(g_fallbacks.limit_inverted[i],
                   page->devices[i].mem_limit_bytes.load(std::memory_order_relaxed));
    set_fallback_compute(i, load_compute_limits(page->devices[i]));
  }
  g_fallbacks.qos.store(page->qos.load(std::memory_order_relaxed), std::memory_order_relaxed);
  g_launch_gate.fallback_throttle.store(page->throttle.load(std::memory_order_relaxed),
                                        std::memory_order_relaxed);
}

void registration_limits(std::uint64_t* start, std::uint64_t* now, int count) {
  for (int i = 0; i < count && i < kMaxDevices; ++i) {
    start[i] = load_inverted(g_fallbacks.start_limit_inverted[i]);
    now[i] = load_inverted(g_fallbacks.limit_inverted[i]);
  }
}

Qos fallback_qos() {
  return g_fallbacks.qos.load(std::memory_order_relaxed) == kQosOpportunistic ? kQosOpportunistic
                                                                              : kQosProduction;
}

}  // namespace client_detail

void request_mem_limit(const SizeSpec* spec) {
  g_has_request = spec != nullptr;
  if (spec != nullptr) g_request = *spec;
}

std::uint64_t requested_mem_limit(std::uint64_t capacity_bytes) {
  std::uint64_t bytes = kNoLimit;
  if (!g_has_request || resolve_size(g_request, true, capacity_bytes, &bytes) != SizeError::kNone) {
    return kNoLimit;  // the interposer validated the request before handing it over
  }
  return bytes;
}

void set_start_limits(const std::uint64_t* limits, int count) {
  for (int i = 0; i < kMaxDevices; ++i) {
    std::uint64_t limit = i < count ? limits[i] : kNoLimit;
    store_inverted(g_fallbacks.start_limit_inverted[i], limit);
    store_inverted(g_fallbacks.limit_inverted[i], limit);
  }
}

void start_limits_from_capacities(const std::uint64_t* capacities, int count) {
  std::uint64_t limits[kMaxDevices];
  for (int i = 0; i < count && i < kMaxDevices; ++i) limits[i] = requested_mem_limit(capacities[i]);
  set_start_limits(limits, count < kMaxDevices ? count : kMaxDevices);
}

std::uint64_t start_mem_limit(int device) {
  return valid(device) ? load_inverted(g_fallbacks.start_limit_inverted[device]) : kNoLimit;
}

std::uint64_t mem_limit(int device) {
  if (!valid(device)) return kNoLimit;
  if (const LimitsPage* page = page_for(device)) {
    return page->devices[device].mem_limit_bytes.load(std::memory_order_relaxed);
  }
  return load_inverted(g_fallbacks.limit_inverted[device]);
}

std::uint64_t device_resident_target(int device) {
  if (!valid(device)) return kNoLimit;
  const LimitsPage* page = page_for(device);
  return page != nullptr ? page->device_resident_target[device].load(std::memory_order_acquire)
                         : kNoLimit;
}

std::uint64_t mem_refused_seq(int device) {
  if (!valid(device)) return 0;
  const LimitsPage* page = page_for(device);
  return page != nullptr ? page->mem_refused_seq[device].load(std::memory_order_acquire) : 0;
}

ComputeLimits compute_limits(int device) {
  ComputeLimits out;
  if (!valid(device)) return out;
  const LimitsPage* page = g_launch_gate.page.load(std::memory_order_acquire);
  if (page != nullptr) {
    if (device < static_cast<int>(page->device_count)) {
      out = load_compute_limits(page->devices[device]);
    }
    return out;
  }
  out.launch_budget = load_inverted(g_fallbacks.budget_inverted[device]);
  out.launch_window_ns = g_fallbacks.window_ns[device].load(std::memory_order_relaxed);
  out.max_queued = load_inverted(g_fallbacks.queued_inverted[device]);
  out.compute_cap_ppm = load_inverted(g_fallbacks.cap_inverted[device]);
  out.yield_mask = g_fallbacks.yield_mask[device].load(std::memory_order_relaxed);
  out.yield_share_ppm = load_inverted(g_fallbacks.share_inverted[device]);
  return out;
}

bool paused() {
  const LimitsPage* page = g_launch_gate.page.load(std::memory_order_acquire);
  return page != nullptr && page->paused.load(std::memory_order_relaxed) != 0;
}

void wait_while_paused() {
  for (;;) {
    const LimitsPage* page = g_launch_gate.page.load(std::memory_order_acquire);
    if (page == nullptr) return;
    std::uint32_t value = page->paused.load(std::memory_order_acquire);
    if (value == 0) return;
    // The timeout covers the one race a wake cannot: the page retired
    // between the load above and the wait (the retiring thread's wake came
    // first). Resumes themselves wake at once.
    timespec timeout{0, client_detail::kPausedRecheckMs * 1000000L};
    client_detail::futex(const_cast<std::atomic<std::uint32_t>*>(&page->paused), FUTEX_WAIT, value,
                         &timeout);
  }
}

bool suspend_requested() {
  const LimitsPage* page = g_launch_gate.page.load(std::memory_order_acquire);
  // A held page's coordinator is gone: its request is nobody's now.
  return page != nullptr &&
         page != client_detail::g_state.held_page.load(std::memory_order_relaxed) &&
         page->suspend_request.load(std::memory_order_acquire) != 0;
}

bool registered() { return g_launch_gate.page.load(std::memory_order_acquire) != nullptr; }

Qos qos() {
  const LimitsPage* page = g_launch_gate.page.load(std::memory_order_acquire);
  std::uint32_t qos = page != nullptr ? page->qos.load(std::memory_order_relaxed)
                                      : g_fallbacks.qos.load(std::memory_order_relaxed);
  return qos == kQosOpportunistic ? kQosOpportunistic : kQosProduction;
}

std::uint32_t pause_reasons() {
  const LimitsPage* page = g_launch_gate.page.load(std::memory_order_acquire);
  return page != nullptr ? page->paused.load(std::memory_order_relaxed) : 0;
}

}  // namespace gpushare::coord::job
