#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "probe/series.h"

using namespace gpushare::probe;

namespace {

constexpr std::uint64_t kGiB = 1ull << 30;
constexpr std::uint64_t kMiB = 1ull << 20;

// A training job's curve: `base` during the host part of each iteration,
// base + grow while its kernels run, from t = 0 for `span_ms`, sampled
// every `step_ms` (with optional jitter on the sample times), plus `leak`
// bytes per ms. The device is busy while the extra memory is held.
struct Shape {
  double period_ms = 11;
  double host_ms = 3;
  std::uint64_t base = kGiB;
  std::uint64_t grow = 512 * kMiB;
  double leak_per_ms = 0;
  double span_ms = 1000;
  double step_ms = 1;
  double jitter_ms = 0;
  double noise_bytes = 0;
};

std::vector<MemorySample> record(const Shape& shape, unsigned seed = 1) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<double> jitter(0, shape.jitter_ms);
  std::normal_distribution<double> noise(0, shape.noise_bytes > 0 ? shape.noise_bytes : 1);
  std::vector<MemorySample> samples;
  double busy_ms = 0, last = 0;
  for (double t = 0; t <= shape.span_ms; t += shape.step_ms) {
    double at = t + (shape.jitter_ms > 0 ? jitter(random) : 0);
    double phase = std::fmod(at, shape.period_ms);
    bool running = phase >= shape.host_ms;
    if (running) busy_ms += at - last;
    last = at;
    double bytes = static_cast<double>(shape.base) + shape.leak_per_ms * at +
                   (running ? static_cast<double>(shape.grow) : 0) +
                   (shape.noise_bytes > 0 ? noise(random) : 0);
    samples.push_back({at, static_cast<std::uint64_t>(std::max(1.0, bytes)),
                       static_cast<std::uint64_t>(busy_ms * 1e6)});
  }
  return samples;
}

}  // namespace

TEST_CASE("probe series: a steady training curve gives its period floor and ceiling") {
  Shape shape;
  MemorySummary summary = summarise_memory(record(shape), shape.step_ms);
  REQUIRE(summary.touched_gpu);
  REQUIRE(summary.period_ms);
  CHECK(*summary.period_ms == Approx(11).epsilon(0.01));
  CHECK(summary.period_source == "memory");
  CHECK(summary.floor_bytes == kGiB);
  CHECK(summary.ceiling_bytes == kGiB + 512 * kMiB);
  CHECK(summary.peak_bytes == kGiB + 512 * kMiB);
  CHECK(summary.mem_bytes == kGiB + 512 * kMiB);
  CHECK(summary.iterations == Approx(1000 / 11.0).margin(1));
  CHECK(summary.busy_fraction == Approx(8 / 11.0).margin(0.02));
}

TEST_CASE("probe series: late samples still give the period within 2 percent") {
  Shape shape;
  shape.jitter_ms = 0.8;
  shape.period_ms = 23.5;
  shape.host_ms = 10;
  MemorySummary summary = summarise_memory(record(shape, 7), shape.step_ms);
  REQUIRE(summary.period_ms);
  CHECK(*summary.period_ms == Approx(23.5).epsilon(0.02));
}

TEST_CASE("probe series: a period between two grid lags is not doubled") {
  for (double period : {11.5, 7.5, 15.25, 40.0}) {
    Shape shape;
    shape.period_ms = period;
    shape.host_ms = period * 0.27;
    MemorySummary summary = summarise_memory(record(shape), shape.step_ms);
    REQUIRE(summary.period_ms);
    CHECK(*summary.period_ms == Approx(period).epsilon(0.01));
  }
}

TEST_CASE("probe series: a growing job shows its iterations over the trend") {
  Shape shape;
  shape.leak_per_ms = 400.0 * kMiB / 1000;  // 400 MiB over the run
  MemorySummary summary = summarise_memory(record(shape), shape.step_ms);
  REQUIRE(summary.period_ms);
  CHECK(*summary.period_ms == Approx(11).epsilon(0.01));
  // Medians over the iterations: the middle of the run.
  CHECK(static_cast<double>(summary.floor_bytes) == Approx(kGiB + 200.0 * kMiB).epsilon(0.02));
  CHECK(summary.ceiling_bytes - summary.floor_bytes == Approx(512.0 * kMiB).epsilon(0.03));
  CHECK(summary.peak_bytes >= kGiB + 900 * kMiB);
  CHECK(summary.mem_bytes >= summary.peak_bytes);
  CHECK(summary.mem_bytes % kMiB == 0);
}

TEST_CASE("probe series: noise over the iterations is not mistaken for them") {
  Shape shape;
  shape.noise_bytes = 64.0 * kMiB;
  MemorySummary summary = summarise_memory(record(shape, 3), shape.step_ms);
  REQUIRE(summary.period_ms);
  CHECK(*summary.period_ms == Approx(11).epsilon(0.02));
}

TEST_CASE("probe series: noise alone has no period") {
  Shape shape;
  shape.grow = 0;
  shape.noise_bytes = 64.0 * kMiB;
  std::vector<MemorySample> samples = record(shape, 5);
  for (MemorySample& s : samples) s.busy_ns = 0;
  MemorySummary summary = summarise_memory(samples, shape.step_ms);
  CHECK_FALSE(summary.period_ms);
  CHECK(summary.period_source.empty());
  CHECK(summary.iterations == 0);
}

TEST_CASE("probe series: a flat curve has no iterations in memory but in activity") {
  Shape shape;
  shape.grow = 0;
  MemorySummary summary = summarise_memory(record(shape), shape.step_ms);
  CHECK(summary.floor_bytes == kGiB);
  CHECK(summary.ceiling_bytes == kGiB);
  REQUIRE(summary.period_ms);
  CHECK(summary.period_source == "activity");
  CHECK(*summary.period_ms == Approx(11).epsilon(0.02));
}

TEST_CASE("probe series: a flat idle curve has no iterations at all") {
  std::vector<MemorySample> samples;
  for (int i = 0; i < 500; ++i) samples.push_back({i * 1.0, 300 * kMiB, 0});
  MemorySummary summary = summarise_memory(samples, 1);
  CHECK(summary.touched_gpu);
  CHECK_FALSE(summary.period_ms);
  CHECK(summary.floor_bytes == 300 * kMiB);
  CHECK(summary.ceiling_bytes == 300 * kMiB);
  CHECK(summary.peak_bytes == 300 * kMiB);
}

TEST_CASE("probe series: a job that never touches the GPU") {
  std::vector<MemorySample> samples;
  for (int i = 0; i < 100; ++i) samples.push_back({i * 1.0, 0, 0});
  MemorySummary summary = summarise_memory(samples, 1);
  CHECK_FALSE(summary.touched_gpu);
  CHECK(summary.peak_bytes == 0);
  CHECK_FALSE(summary.period_ms);
  CHECK(summarise_memory({}, 1).touched_gpu == false);
}

TEST_CASE("probe series: too few repetitions are no period") {
  Shape shape;
  shape.span_ms = 25;  // two iterations and a bit
  std::vector<MemorySample> samples = record(shape);
  CHECK_FALSE(detect_period(resample_memory(samples, 1), 1));
}

TEST_CASE("probe series: resampling holds each reading until the next") {
  std::vector<MemorySample> samples = {{0, 10, 0}, {2.5, 20, 0}, {3, 30, 0}, {5, 40, 0}};
  std::vector<double> grid = resample_memory(samples, 1);
  CHECK(grid == std::vector<double>{10, 10, 10, 30, 30, 40});
}

TEST_CASE("probe series: busy time is spread over the time it accrued") {
  std::vector<MemorySample> samples = {{0, 1, 0}, {2, 1, 2000000}, {4, 1, 2000000}};
  std::vector<double> grid = resample_busy(samples, 1);
  REQUIRE(grid.size() == 4);
  CHECK(grid[0] == Approx(1));
  CHECK(grid[1] == Approx(1));
  CHECK(grid[2] == Approx(0));
  CHECK(grid[3] == Approx(0));
}

TEST_CASE("probe series: the memory period ignores the time before the job's first allocation") {
  Shape shape;
  std::vector<MemorySample> samples;
  for (int i = 0; i < 300; ++i) samples.push_back({i * 1.0, 0, 0});
  for (MemorySample s : record(shape)) {
    s.t_ms += 300;
    samples.push_back(s);
  }
  auto period = memory_period(samples, 1);
  REQUIRE(period);
  CHECK(period->period_ms == Approx(11).epsilon(0.01));
  CHECK_FALSE(memory_period(std::vector<MemorySample>(50, MemorySample{}), 1));
}

TEST_CASE("probe series: a recorded workload curve with short dips") {
  std::ifstream in(std::string(GPUSHARE_SOURCE_DIR) + "/tests/data/probe/workload-async-grow.txt");
  REQUIRE(in);
  std::vector<MemorySample> samples;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    MemorySample sample;
    fields >> sample.t_ms >> sample.mem_bytes;
    samples.push_back(sample);
  }
  REQUIRE(samples.size() > 1000);
  MemorySummary summary = summarise_memory(samples, 1);
  REQUIRE(summary.period_ms);
  CHECK(*summary.period_ms == Approx(11.55).epsilon(0.02));
  CHECK(summary.floor_bytes == kGiB + 256 * kMiB);
  CHECK(summary.ceiling_bytes == kGiB + 512 * kMiB);
}

TEST_CASE("probe series: short dips between long highs keep their period") {
  Shape shape;
  shape.period_ms = 11.5;
  shape.host_ms = 2;
  shape.jitter_ms = 0.3;
  MemorySummary summary = summarise_memory(record(shape, 11), shape.step_ms);
  REQUIRE(summary.period_ms);
  CHECK(*summary.period_ms == Approx(11.5).epsilon(0.02));
}
