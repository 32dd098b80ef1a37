// The time-slice arithmetic of the real-GPU calibration (tests/gpu/calibrate).
#include <catch2/catch.hpp>

#include "calibrate/slices.h"

using gpushare::gpucheck::analyse_slices;
using gpushare::gpucheck::Gap;
using gpushare::gpucheck::median;
using gpushare::gpucheck::SliceRecord;

namespace {

constexpr std::uint64_t kMs = 1000000, kUs = 1000;

// Two kernels alternating: A runs `slice` from t=0, a switch costs `cost`,
// B runs `slice`, a switch, A again, ...; each lives `life` from its first
// reading (B's is when it first runs).
void alternate(std::uint64_t slice, std::uint64_t cost, std::uint64_t life, SliceRecord* a,
               SliceRecord* b) {
  std::uint64_t period = 2 * (slice + cost);
  for (SliceRecord* record : {a, b}) {
    record->start_ns = record == a ? 0 : slice + cost;
    record->end_ns = record->start_ns + life;
    for (std::uint64_t t = record->start_ns; t + period <= record->end_ns; t += period) {
      record->gaps.push_back({t + slice, t + period});
    }
  }
}

}  // namespace

TEST_CASE("median of odd, even and empty samples") {
  CHECK(median({3, 1, 2}) == 2);
  CHECK(median({4, 1, 3, 2}) == Approx(2.5));
  CHECK(median({}) == 0);
}

TEST_CASE("two kernels alternating give their slice and switch cost") {
  SliceRecord a, b;
  alternate(2 * kMs, 50 * kUs, 200 * kMs, &a, &b);
  auto analysis = analyse_slices(a, b);
  REQUIRE(analysis);
  CHECK(analysis->slice_ms_median == Approx(2.0));
  CHECK(analysis->slice_ms_min == Approx(2.0));
  CHECK(analysis->slice_ms_max == Approx(2.0));
  CHECK(analysis->switch_us == Approx(50.0).epsilon(0.02));
  CHECK(analysis->switches > 80);
  CHECK(analysis->runs > 80);
}

TEST_CASE("uneven slices: the median, not the mean") {
  SliceRecord a{0, 100 * kMs, {}}, b{1 * kMs, 101 * kMs, {}};
  // A runs 0-1, 3-4, 6-10, 12-13; B runs 1-3, 4-6, 10-12, 13-...
  a.gaps = {{1 * kMs, 3 * kMs}, {4 * kMs, 6 * kMs}, {10 * kMs, 12 * kMs}, {13 * kMs, 99 * kMs}};
  b.gaps = {{3 * kMs, 4 * kMs}, {6 * kMs, 10 * kMs}, {12 * kMs, 13 * kMs}};
  auto analysis = analyse_slices(a, b);
  REQUIRE(analysis);
  // Whole runs: A 1, 4, 1 ms; B 2, 2 ms (its last run ends with its life).
  CHECK(analysis->runs == 5);
  CHECK(analysis->slice_ms_median == Approx(2.0));
  CHECK(analysis->slice_ms_max == Approx(4.0));
  CHECK(analysis->switch_us == Approx(0.0).margin(1e-9));  // no time uncovered
}

TEST_CASE("kernels that never overlapped or were never sliced are not measurable") {
  SliceRecord a{0, 10 * kMs, {}}, b{20 * kMs, 30 * kMs, {}};
  auto apart = analyse_slices(a, b);
  REQUIRE_FALSE(apart);
  CHECK(apart.error().message == "the two kernels never ran at the same time");

  SliceRecord c{0, 10 * kMs, {}}, d{0, 10 * kMs, {}};
  auto unsliced = analyse_slices(c, d);
  REQUIRE_FALSE(unsliced);
  CHECK_THAT(unsliced.error().message, Catch::Matchers::Contains("did not time-slice"));
}

TEST_CASE("malformed records are refused, naming the kernel") {
  SliceRecord zero{}, fine{0, 10 * kMs, {}};
  auto empty = analyse_slices(zero, fine);  // what the simulated GPU leaves: all zeros
  REQUIRE_FALSE(empty);
  CHECK(empty.error().message == "kernel A: it ended before it started");

  SliceRecord disordered{0, 10 * kMs, {{5 * kMs, 6 * kMs}, {2 * kMs, 3 * kMs}}};
  auto bad = analyse_slices(fine, disordered);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message == "kernel B: its gaps are out of order or outside its run");

  SliceRecord outside{0, 10 * kMs, {{9 * kMs, 11 * kMs}}};
  REQUIRE_FALSE(analyse_slices(outside, fine));
}
