#!/usr/bin/env bash
# Two workloads sharing one simulated GPU (the README's demonstration):
# the device runs one at a time, so the two together need at least twice
# the kernel time of one, and the device's busy time is exactly the sum;
# their memory adds up, and a third that does not fit fails. (The
# workloads have no start barrier, so how much they overlap depends on the
# machine's load; only lower bounds on time are checked.)
. "$(dirname "$0")/../common.inc"
# Kernel time exactly: no cold run after a switch (it counts as busy time).
export GPUSHARE_SIM_SWITCH_COLD_US=0
use_sim GPUSHARE_SIM_MEMORY=8GiB
workload="$libexec/gpushare-workload"
job=(--iterations 40 --kernels-per-iter 1 --kernel-us 5000 --verify 1MiB)
elapsed() { jq -r 'select(.kind=="workload-summary") | .elapsed_ms | floor' "$1"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
busy() { gpushare-probe device | jq -r .busy_ns; }

expect_exit 0 "$workload" "${job[@]}" --mem 3GiB
solo=$(elapsed "$scratch/out")
[ "$solo" -ge 200 ] || fail "40 x 5 ms took $solo ms alone"

busy_before=$(busy)
start=$(now_ms)
"$workload" "${job[@]}" --mem 3GiB --label a >"$scratch/a.out" &
"$workload" "${job[@]}" --mem 3GiB --label b >"$scratch/b.out" &
wait
together=$(($(now_ms) - start))
echo "alone $solo ms; both done after $together ms"
[ "$together" -ge 400 ] || fail "both were done after $together ms: not one device's time"
[ $(($(busy) - busy_before)) = 400000000 ] || fail "the device was not busy 2 x 200 ms"
for job in a b; do
  [ "$(jq -r 'select(.kind=="workload-summary") | .iterations' "$scratch/$job.out")" = 40 ] ||
    fail "job $job did not finish its 40 iterations"
done

# 3 x (3 GiB + 256 MiB of context) does not fit in 8 GiB: exactly one fails.
# (400 iterations, 2 s alone: long enough for all three to overlap even
# when they start far apart on a loaded machine.)
for label in a b c; do
  "$workload" --iterations 400 --kernels-per-iter 1 --kernel-us 5000 --verify 1MiB --mem 3GiB --label $label >"$scratch/$label.out" 2>"$scratch/$label.err" &
done
failed=0
for _ in a b c; do wait -n || failed=$((failed + 1)); done
[ "$failed" = 1 ] || fail "$failed of three 3 GiB jobs failed on an 8 GiB device, expected 1"
cat "$scratch"/[abc].err | grep -q 'cuMemAlloc_v2(3221225472 bytes): CUDA_ERROR_OUT_OF_MEMORY' ||
  fail "the failed job did not report running out of memory"
