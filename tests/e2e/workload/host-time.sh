#!/usr/bin/env bash
# gpushare-workload --host-us adds host time to each iteration while the
# GPU idles, --duration runs for a time instead of a count, and
# per-iteration records carry t_ms on CLOCK_MONOTONIC (increasing, and
# spaced at least an iteration apart).
. "$(dirname "$0")/../common.inc"
workload="$libexec/gpushare-workload"
use_sim

# 5 iterations of 1 kernel of 1 ms and 20 ms of host time: each iteration
# takes at least 21 ms, of which the GPU ran 1 ms.
expect_exit 0 "$workload" --mem 1MiB --verify 64KiB --iterations 5 --kernels-per-iter 1 \
  --kernel-us 1000 --host-us 20000 --per-iteration
jq -e -s '[.[] | select(.kind == "workload-iteration")] | length == 5
  and all(.iteration_ms >= 21 and .gpu_ms < 10)
  and ([.[].t_ms] as $t | [range(1; 5) | $t[.] - $t[. - 1] >= 21] | all)' \
  "$scratch/out" >/dev/null || fail "host time or t_ms wrong: $(cat "$scratch/out")"
jq -e 'select(.kind == "workload-summary") | .iteration_ms_mean >= 21 and .gpu_ms_total < 50' \
  "$scratch/out" >/dev/null || fail "summary does not reflect the host time"

# --duration 0.3 with 10 ms iterations: as many as fit in 0.3 s (at least
# one, and the run ends soon after the duration, whatever the load).
expect_exit 0 "$workload" --mem 1MiB --verify 64KiB --duration 0.3 --kernels-per-iter 1 \
  --kernel-us 10000
jq -e 'select(.kind == "workload-summary") | .iterations >= 1 and .iterations <= 30
  and .elapsed_ms >= 300 and .kernels == .iterations' "$scratch/out" >/dev/null ||
  fail "--duration did not bound the run: $(cat "$scratch/out")"

for bad in "--duration 0" "--duration 1 --iterations 3" "--host-us -1" "--duration x"; do
  # shellcheck disable=SC2086
  expect_exit 2 "$workload" $bad
  expect_grep '^gpushare-workload: error: ' "$scratch/err"
done
