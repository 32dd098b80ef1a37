// The pattern a series of step (or mark) times repeats, found the same way
// on both sides: the coordinator's loop measures whole patterns of a
// production job's steps (compute_control.cc), and a follower predicts a
// production job's next mark from its last ones (coord/job/yield.cc).
//
// A job replaying a few recorded steps, or one that logs, evaluates or
// accumulates gradients every few steps, repeats a pattern of step times.
// Its lag is the least lag at which each time is closest to the time that
// many places away, when that is clearly closer (half as far or less) than
// at a lag of one. A change of load beside the job moves all its times
// alike, so it does not hide the pattern.
//
// Header-only arithmetic, no allocation and no libstdc++: the follower's
// side is compiled into the interposer.
#pragma once

namespace gpushare::coord {

/// The lag (2..max_lag) of the pattern `times` repeats, or 1 for none.
/// `times` holds `count` times in order (either direction), 0 where one
/// is not known; a lag is judged only with `min_pairs` pairs of known times
/// (the longer lags stop at the first that has fewer); `min_uneven`: the
/// least mean relative difference |a - b| / (a + b) of neighbours for a
/// pattern to be claimed at all (0: any).
inline int repeat_lag(const double* times, int count, int max_lag, int min_pairs,
                      double min_uneven) {
  constexpr int kMaxLag = 16;
  if (max_lag > kMaxLag) max_lag = kMaxLag;
  double difference[kMaxLag + 1] = {};
  int longest = 0;  // the longest lag with pairs enough to judge
  for (int lag = 1; lag <= max_lag; ++lag) {
    double sum = 0;
    int pairs = 0;
    for (int i = lag; i < count; ++i) {
      double a = times[i], b = times[i - lag];
      if (a <= 0 || b <= 0) continue;
      sum += (a > b ? a - b : b - a) / (a + b);
      ++pairs;
    }
    if (pairs < min_pairs) break;
    difference[lag] = sum / pairs;
    longest = lag;
  }
  if (longest < 2 || difference[1] < min_uneven) return 1;
  double least = difference[1];
  for (int lag = 2; lag <= longest; ++lag) {
    if (difference[lag] < least) least = difference[lag];
  }
  if (least > 0.5 * difference[1]) return 1;
  for (int lag = 2; lag <= longest; ++lag) {
    if (difference[lag] <= 1.25 * least + 1e-12) return lag;
  }
  return 1;
}

}  // namespace gpushare::coord
