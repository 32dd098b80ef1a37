#!/usr/bin/env bash
# gpushare-workload --trace replays a real step timeline: every kernel of
# each step (825 per ResNet-50 batch-32 step) in one iteration per step,
# a record per step with t_ms, the steps in a cycle; a bad trace is an
# input error naming FILE:LINE:COL, with nothing on stdout.
. "$(dirname "$0")/../common.inc"
workload="$libexec/gpushare-workload"
use_sim
traces="$libexec/bench/traces"
[ -f "$traces/resnet50-32.csv" ] || fail "the kernel traces are not installed in $traces"

expect_exit 0 "$workload" --mem 16MiB --verify 1MiB --trace "$traces/resnet50-32.csv" \
  --launch-scale 0 --iterations 4 --per-iteration
# Three steps of 825 kernels in the trace; the fourth iteration is the first step again.
[ "$(jq -r 'select(.kind == "workload-summary") | .kernels' "$scratch/out")" = 3300 ] ||
  fail "the replay did not launch 4 x 825 kernels: $(cat "$scratch/out")"
[ "$(jq -r 'select(.kind == "workload-iteration") | .t_ms' "$scratch/out" | wc -l)" = 4 ] ||
  fail "not one record with t_ms per step"
# Each step's GPU time is its kernels' recorded time (about 9.8 ms), not a spin default.
jq -e -s '[.[] | select(.kind == "workload-iteration") | .gpu_ms] | all(. >= 9.5)' "$scratch/out" \
  >/dev/null || fail "a step ran less GPU time than its kernels recorded"

# Recorded launch offsets are kept: at scale 1 a step lasts at least its
# recorded CPU span (63.6 ms for the first step), at 0 much less.
expect_exit 0 "$workload" --mem 16MiB --verify 1MiB --trace "$traces/resnet50-32.csv" \
  --iterations 1 --per-iteration
jq -e -s '[.[] | select(.kind == "workload-iteration")][0].iteration_ms >= 63' "$scratch/out" >/dev/null ||
  fail "the replay did not wait for the recorded launch offsets: $(cat "$scratch/out")"

# Bad input: file:line:col and exit 2.
printf 'launch_us,start_us,kernel_us,stream,kernel\n0,1,2,7,a\n3,4,oops,7,b\n' >"$scratch/bad.csv"
expect_exit 2 "$workload" --trace "$scratch/bad.csv"
[ ! -s "$scratch/out" ] || fail "a bad trace wrote to stdout"
expect_grep "^gpushare-workload: error: $scratch/bad.csv:3:5: kernel_us: 'oops' is not a number$" \
  "$scratch/err"
printf 'launch_us,start_us,kernel_us,stream,kernel\n0,1,2,7,a\n' >"$scratch/one.csv"
printf 'call_us,return_us\n' >"$scratch/one.syncs.csv"
expect_exit 2 "$workload" --trace "$scratch/one.csv"
expect_grep "one.syncs.csv:1:1: expected the header 'call_us,return_us,call'" "$scratch/err"
expect_exit 2 "$workload" --trace "$scratch/missing.csv"
expect_grep "cannot read" "$scratch/err"
expect_exit 2 "$workload" --trace "$traces/resnet50-32.csv" --kernel-us 5
echo "workload-trace: ok"
