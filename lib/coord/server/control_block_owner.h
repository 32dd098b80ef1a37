// The coordinator's side of a job's control block (control_block.h): creates
// the two memfds, keeps writable mappings, and seals the limits page so the
// job can only ever map it read-only.
#pragma once

#include <cstdint>
#include <memory>

#include "common/result.h"
#include "coord/contract/control_block.h"

namespace gpushare::coord {

/// One device's compute limits (see control_block.h); kNoLimit: none.
struct ComputeLimits {
  std::uint64_t launch_budget = kNoLimit;
  std::uint64_t launch_window_ns = 0;
  std::uint64_t max_queued = kNoLimit;
  std::uint64_t compute_cap_ppm = kNoLimit;
  bool operator==(const ComputeLimits&) const = default;
};

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
  /// Closes the descriptors once sent; the mappings stay.
  void close_descriptors();

  int device_count() const { return static_cast<int>(limits_->device_count); }
  std::uint64_t mem_limit(int device) const;
  void set_mem_limit(int device, std::uint64_t bytes);
  bool paused() const;
  /// Pausing takes effect at the job's next launch; resuming wakes every
  /// launch waiting on the page.
  void set_paused(bool paused);
  ComputeLimits compute(int device) const;
  /// Stores a device's compute limits (a no-op when unchanged) and keeps
  /// the page's `throttle` flag true exactly while some limit is in force.
  void set_compute(int device, const ComputeLimits& limits);
  std::uint32_t qos() const;
  void set_qos(std::uint32_t qos);
  /// The most managed bytes the job may keep on a device (issue 11);
  /// kNoLimit: no target. A no-op when unchanged.
  std::uint64_t device_resident_target(int device) const;
  void set_device_resident_target(int device, std::uint64_t bytes);
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

  int limits_fd_ = -1;
  int telemetry_fd_ = -1;
  LimitsPage* limits_ = nullptr;
  TelemetryPage* telemetry_ = nullptr;
};

}  // namespace gpushare::coord
