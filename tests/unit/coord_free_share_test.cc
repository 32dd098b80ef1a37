#include <catch2/catch.hpp>

#include "coord/server/compute/free_share.h"

using namespace gpushare;
using namespace gpushare::coord;
using namespace gpushare::coord::server;

namespace {

constexpr std::uint64_t kWindow = 1'000'000'000;

JobView job(std::uint64_t id, std::uint32_t qos, std::vector<std::int64_t> pids,
            const char* uuid = "GPU-a") {
  JobView view;
  view.id = id;
  view.qos = qos;
  view.pids = std::move(pids);
  view.pid = view.pids.front();
  JobDeviceView device;
  device.uuid = uuid;
  view.devices.push_back(device);
  return view;
}

class FakeSource final : public GpuTimeSource {
 public:
  std::map<std::string, std::map<pid_t, std::uint64_t>> busy_by_device;
  bool ok = true;
  int calls = 0;
  bool busy(const std::string& uuid, std::uint64_t, std::map<pid_t, std::uint64_t>* by_pid) override {
    ++calls;
    if (!ok) return false;
    *by_pid = busy_by_device[uuid];
    return true;
  }
};

}  // namespace

TEST_CASE("the free time is the window less what others used, never below zero",
          "[coord][free-share]") {
  CHECK(free_gpu_ns(kWindow, 0) == kWindow);
  CHECK(free_gpu_ns(kWindow, 600'000'000) == 400'000'000);
  CHECK(free_gpu_ns(kWindow, kWindow) == 0);
  CHECK(free_gpu_ns(kWindow, kWindow + 5) == 0);  // meters that round up
}

TEST_CASE("the share is millionths of the free time, and none of next to nothing",
          "[coord][free-share]") {
  CHECK(free_share_ppm(200'000'000, 400'000'000, kWindow) == 500'000u);
  CHECK(free_share_ppm(0, 400'000'000, kWindow) == 0u);
  CHECK(free_share_ppm(100'000'000, 300'000'000, kWindow) == 333'333u);  // rounded to nearest
  CHECK(free_share_ppm(200'000'000, 300'000'000, kWindow) == 666'667u);
  CHECK_FALSE(free_share_ppm(0, 0, kWindow).has_value());
  CHECK_FALSE(free_share_ppm(5, 0, kWindow).has_value());
  // Less than 2% of the window free: whole-percent rounding could be a
  // quarter of the figure.
  CHECK_FALSE(free_share_ppm(10'000'000, 19'999'999, kWindow).has_value());
  CHECK(free_share_ppm(10'000'000, 20'000'000, kWindow) == 500'000u);
  // More than all of the free time is the meter's rounding.
  CHECK(free_share_ppm(40'000'000, 30'000'000, kWindow) == 1'000'000u);
  CHECK(free_share_ppm(UINT64_MAX, kWindow, kWindow) == 1'000'000u);  // no wrap
}

TEST_CASE("NVML samples give busy time over the whole window", "[coord][free-share]") {
  // One sample per process (the simulator): its percent of the window.
  CHECK(busy_ns_of_samples(37, 1, 1, kWindow) == 370'000'000);
  // Six periods in the window; a process with two samples at 60% ran
  // 120% of one period out of six.
  CHECK(busy_ns_of_samples(120, 2, 6, kWindow) == 200'000'000);
  CHECK(busy_ns_of_samples(0, 0, 6, kWindow) == 0);
  CHECK(busy_ns_of_samples(700, 1, 1, kWindow) == kWindow);  // bounded
}

TEST_CASE("an opportunistic job's share counts production and outsiders as taken",
          "[coord][free-share]") {
  std::vector<JobView> jobs = {job(1, kQosProduction, {100}), job(2, kQosOpportunistic, {200, 201}),
                               job(3, kQosOpportunistic, {300})};
  // Production 50%, a process outside gpushare 10%, the two opportunistic
  // jobs 20% (two processes) and 10%.
  std::map<std::string, std::map<pid_t, std::uint64_t>> busy = {
      {"GPU-a",
       {{100, 500'000'000},
        {999, 100'000'000},
        {200, 150'000'000},
        {201, 50'000'000},
        {300, 100'000'000}}}};
  annotate_free_share(jobs, busy, kWindow);
  for (const JobView& j : jobs) REQUIRE(j.free_gpu_ns_last_window == 400'000'000u);
  CHECK_FALSE(jobs[0].free_share_ppm.has_value());  // production: no share
  CHECK(jobs[1].free_share_ppm == 500'000u);
  CHECK(jobs[2].free_share_ppm == 250'000u);
}

TEST_CASE("a device without a reading leaves the figures unknown", "[coord][free-share]") {
  std::vector<JobView> jobs = {job(1, kQosOpportunistic, {200}, "GPU-b")};
  jobs[0].free_share_ppm = 7;  // stale figures are cleared, never kept
  annotate_free_share(jobs, {{"GPU-a", {{200, 5}}}}, kWindow);
  CHECK_FALSE(jobs[0].free_gpu_ns_last_window.has_value());
  CHECK_FALSE(jobs[0].free_share_ppm.has_value());
}

TEST_CASE("production that left nothing free gives a free time of 0 and no share",
          "[coord][free-share]") {
  std::vector<JobView> jobs = {job(1, kQosProduction, {100}), job(2, kQosOpportunistic, {200})};
  annotate_free_share(jobs, {{"GPU-a", {{100, kWindow}}}}, kWindow);
  CHECK(jobs[1].free_gpu_ns_last_window == 0u);
  CHECK_FALSE(jobs[1].free_share_ppm.has_value());
}

TEST_CASE("the meter asks its source once per device per cache period", "[coord][free-share]") {
  auto owned = std::make_unique<FakeSource>();
  FakeSource* source = owned.get();
  source->busy_by_device["GPU-a"] = {{100, 250'000'000}, {200, 375'000'000}};
  FreeShareMeter meter(std::move(owned));
  std::vector<JobView> jobs = {job(1, kQosProduction, {100}), job(2, kQosOpportunistic, {200})};
  meter.annotate(jobs, 1'000'000'000);
  CHECK(source->calls == 1);  // both jobs are on one device
  CHECK(jobs[1].free_share_ppm == 500'000u);
  meter.annotate(jobs, 1'000'000'000 + FreeShareMeter::kCacheNs - 1);
  CHECK(source->calls == 1);
  meter.annotate(jobs, 1'000'000'000 + FreeShareMeter::kCacheNs);
  CHECK(source->calls == 2);

  // show: one job, its device's other jobs known from the list.
  JobView one = jobs[1];
  one.free_share_ppm.reset();
  meter.annotate(one, jobs, 1'000'000'000 + FreeShareMeter::kCacheNs);
  CHECK(one.free_share_ppm == 500'000u);
}

TEST_CASE("a source that cannot tell leaves every figure unknown", "[coord][free-share]") {
  auto owned = std::make_unique<FakeSource>();
  owned->ok = false;
  FreeShareMeter meter(std::move(owned));
  std::vector<JobView> jobs = {job(2, kQosOpportunistic, {200})};
  meter.annotate(jobs, 1);
  CHECK_FALSE(jobs[0].free_gpu_ns_last_window.has_value());
  CHECK_FALSE(jobs[0].free_share_ppm.has_value());
}
