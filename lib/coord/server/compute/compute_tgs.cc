// TGS's adaptive rate control (Wu et al., NSDI'23), as published, for
// comparison with the gpushare loop (bench/share). Differences forced by
// our signals: TGS counts kernel blocks, we count launches (so its block
// constants are divided by 1000: a start limit of 20 launches per 50 ms
// window for its 20000 blocks, a minimum step of 1 launch for 1000 blocks);
// the production rate is the launch rate of the device's production jobs.
// Everything else is TGS's: 5-s samples, a solo rate (max_rate) profiled
// over 5 samples as the largest average of two consecutive ones, slow start
// (x1.5 + 1) then additive increase (0.025% of max_rate) and decrease (8%)
// against |rate - max_rate| / max_rate <= 3%, back to slow start (/10) at
// 9%, a stale baseline lowered by 20% after 20 samples over 12%, and the
// limit lifted while production is idle (more than 2 near-zero samples).
#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "coord/server/compute/compute_control.h"

namespace gpushare::coord::server {
namespace {

constexpr std::uint64_t kTgsWindowNs = 50'000'000;
constexpr double kTgsStartLimit = 20;
constexpr int kProfileSamples = 5;

class TgsController : public DeviceController {
 public:
  explicit TgsController(const ComputeTuning& tuning) : t_(tuning) {}

  std::vector<ComputeJobOutput> tick(std::uint64_t now,
                                     const std::vector<ComputeJobInput>& jobs) override {
    std::uint64_t production = 0, opportunistic = 0;
    bool any_production = false;
    for (const ComputeJobInput& job : jobs) {
      (job.qos == kQosProduction ? production : opportunistic) += job.launches;
      any_production |= job.qos == kQosProduction;
    }
    if (!any_production) {
      phase_ = Phase::kFree;
    } else if (phase_ == Phase::kFree) {
      phase_ = Phase::kProfile;  // "on connect": limit 0, profile
      profile_.clear();
      limit_ = 0;
      sample_start_ = 0;
    }
    if (sample_start_ == 0 || production < production_at_start_ ||
        opportunistic < opportunistic_at_start_) {
      start_sample(now, production, opportunistic);
    } else if (now - sample_start_ >= t_.tgs_sample_ns) {
      double seconds = static_cast<double>(now - sample_start_) / 1e9;
      double rate = static_cast<double>(production - production_at_start_) / seconds;
      double own = static_cast<double>(opportunistic - opportunistic_at_start_) / seconds;
      if (phase_ != Phase::kFree) sample(rate, own * kTgsWindowNs / 1e9);
      start_sample(now, production, opportunistic);
    }
    std::vector<ComputeJobOutput> out;
    for (const ComputeJobInput& job : jobs) {
      ComputeJobOutput o;
      o.id = job.id;
      if (job.qos == kQosOpportunistic && phase_ != Phase::kFree && !idle_) {
        o.limits.launch_budget = static_cast<std::uint64_t>(std::max(0.0, limit_));
        o.limits.launch_window_ns = kTgsWindowNs;
      }
      o.limits.compute_cap_ppm = job.compute_cap_ppm;
      out.push_back(o);
    }
    // TGS's own estimate (max_rate) is in launches/s; the speeds shown are
    // measured as under every policy, and no solo estimate is shown.
    meter_.measure(now, jobs, &out);
    return out;
  }

  ComputeDeviceStatus status() const override {
    static const char* const kNames[] = {"free", "tgs-profile", "tgs-slow-start", "tgs-avoid"};
    return {kNames[static_cast<int>(phase_)], limit_};
  }

 private:
  enum class Phase { kFree, kProfile, kSlowStart, kAvoid };

  void start_sample(std::uint64_t now, std::uint64_t production, std::uint64_t opportunistic) {
    sample_start_ = now;
    production_at_start_ = production;
    opportunistic_at_start_ = opportunistic;
  }

  void sample(double rate, double own_per_window) {
    if (phase_ == Phase::kProfile) {
      profile_.push_back(rate);
      if (profile_.size() < kProfileSamples) return;
      max_rate_ = 0;
      for (std::size_t i = 1; i < profile_.size(); ++i) {
        max_rate_ = std::max(max_rate_, (profile_[i - 1] + profile_[i]) / 2);
      }
      phase_ = Phase::kSlowStart;
      limit_ = kTgsStartLimit;
      return;
    }
    if (max_rate_ <= 0) return;
    // Idle production: more than 2 near-zero samples lift the limit.
    near_zero_ = rate < 0.01 * max_rate_ ? near_zero_ + 1 : 0;
    idle_ = near_zero_ > 2;
    if (idle_) return;
    double d = std::fabs(rate - max_rate_) / max_rate_;
    double per_sample = max_rate_ * static_cast<double>(t_.tgs_sample_ns) / 1e9;
    if (phase_ == Phase::kSlowStart) {
      if (d <= 0.03) {
        limit_ = std::min(1.5 * limit_ + 1, std::max(3 * own_per_window, 1e6));
      } else {
        limit_ /= 1.5;
        phase_ = Phase::kAvoid;
      }
    } else if (d <= 0.03) {
      limit_ += std::max(0.00025 * per_sample, 1.0);
    } else {
      limit_ -= std::max(0.08 * limit_, 1.0);
      if (d >= 0.09) {
        phase_ = Phase::kSlowStart;
        limit_ /= 10;
      }
    }
    limit_ = std::max(limit_, 0.0);
    stale_ = d >= 0.12 ? stale_ + 1 : 0;
    if (stale_ >= 20) {
      max_rate_ *= 0.8;
      phase_ = Phase::kSlowStart;
      limit_ /= 2;
      stale_ = 0;
    }
  }

  ComputeTuning t_;
  ProgressMeter meter_;
  Phase phase_ = Phase::kFree;
  std::vector<double> profile_;
  double max_rate_ = 0;
  double limit_ = 0;
  int near_zero_ = 0;
  int stale_ = 0;
  bool idle_ = false;
  std::uint64_t sample_start_ = 0;
  std::uint64_t production_at_start_ = 0;
  std::uint64_t opportunistic_at_start_ = 0;
};

}  // namespace

std::unique_ptr<DeviceController> make_tgs_controller(const ComputeTuning& tuning) {
  return std::make_unique<TgsController>(tuning);
}

}  // namespace gpushare::coord::server
