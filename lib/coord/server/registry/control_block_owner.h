// The coordinator's side of a job's control block (control_block.h): creates
// the two memfds, keeps writable mappings, and seals the limits page so the
// job can only ever map it read-only.
#pragma once

#include <cstdint>
#include <memory>

#include "common/result.h"
#include "coord/contract/compute_limits.h"
#include "coord/contract/control_block.h"

namespace gpushare::coord::server {

class ControlBlock {
 public:
  /// Creates and initialises both pages: the given limits, not paused.
  static Result<std::unique_ptr<ControlBlock>> create(std::uint64_t job_id, int device_count,
                                                      const std::uint64_t* mem_limit_bytes,
                                                      std::uint32_t qos);
  ~ControlBlock();
  ControlBlock(const ControlBlock&) = delete;
  ControlBlock& operator=(const ControlBlock&) = delete;

  /// The descriptors to send to the job (valid until close_descriptors()).
  int limits_fd() const { return limits_fd_; }
  int telemetry_fd() const { return telemetry_fd_; }
  /// Closes the limits and telemetry descriptors once sent; the mappings
  /// stay. The yield page's descriptor stays open: it is sent on to
  /// opportunistic jobs (layout 4).
  void close_descriptors();

  /// The job's yield page (control_block.h, layout 4): its descriptor, to
  /// send at registration and to opportunistic jobs once sealed.
  int yield_fd() const { return yield_fd_; }
  /// Whether the job sealed its yield page against writable mappings, so
  /// that a receiver can only read it (checked until true, then kept).
  bool yield_sealed();
  /// The job's busy mark now, and its 0 -> 1 transitions so far.
  bool yield_busy() const;
  std::uint64_t yield_marks() const;
  std::uint32_t yield_beats() const;  ///< the producer's heartbeat (control_block.h)
  /// The part of its step the job is idle, by its page's claims (gap over
  /// gap plus span, layout 7; 0 while unknown).
  double yield_gap_share() const;

  int device_count() const { return static_cast<int>(limits_->device_count); }
  std::uint64_t mem_limit(int device) const;
  void set_mem_limit(int device, std::uint64_t bytes);
  bool paused() const;
  /// The kPause* bits in force (control_block.h); paused() is "any".
  std::uint32_t pause_reasons() const;
  /// Pausing takes effect at the job's next launch; every change wakes the
  /// launches waiting on the page (they wait again while a reason is left).
  void set_pause_reasons(std::uint32_t reasons);
  /// A device's compute limits as the page holds them, its yield mask
  /// included (coord/contract/compute_limits.h).
  ComputeLimits compute(int device) const;
  /// Stores a device's compute limits (a no-op when unchanged) and keeps
  /// the page's `throttle` flag true exactly while some limit is in force.
  /// `limits.yield_mask` is not stored: the yield mask is set_yield_mask's.
  void set_compute(int device, const ComputeLimits& limits);
  /// The yield slots an opportunistic job waits for on a device (layout 4);
  /// keeps `throttle` set while any is. A no-op when unchanged.
  std::uint64_t yield_mask(int device) const;
  void set_yield_mask(int device, std::uint64_t mask);
  /// The job's part of a gap among the device's opportunistic jobs
  /// (control_block.h, layout 7); kNoLimit: all of it.
  void set_yield_share(int device, std::uint64_t share_ppm);
  /// The job's turn among the device's opportunistic jobs (layout 8).
  void set_yield_turn(int device, std::uint32_t index, std::uint32_t count);
  std::uint32_t qos() const;
  void set_qos(std::uint32_t qos);
  /// The most managed bytes the job may keep on a device;
  /// kNoLimit: no target. A no-op when unchanged; true when it changed.
  std::uint64_t device_resident_target(int device) const;
  bool set_device_resident_target(int device, std::uint64_t bytes);
  /// Tells the job that its production allocation waiting as `request_seq`
  /// on `device` will get no room (control_block.h, "No room coming").
  void refuse_room(int device, std::uint64_t request_seq);

  /// Whether the job is asked to be suspended (layout 4); setting it bumps
  /// the generation. The job's client thread does the work.
  bool suspend_requested() const;
  void set_suspend_requested(bool suspend);

  /// What the job last wrote. Values are the job's own claims: untrusted,
  /// shown as they are.
  const TelemetryPage& telemetry() const { return *telemetry_; }

 private:
  ControlBlock() = default;
  void bump();
  void update_throttle();

  int limits_fd_ = -1;
  int telemetry_fd_ = -1;
  int yield_fd_ = -1;
  bool yield_sealed_ = false;
  YieldPage* yield_ = nullptr;
  LimitsPage* limits_ = nullptr;
  TelemetryPage* telemetry_ = nullptr;
};

}  // namespace gpushare::coord::server
