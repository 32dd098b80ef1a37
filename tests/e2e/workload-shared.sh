#!/usr/bin/env bash
# Two workloads sharing one simulated GPU (the README's demonstration):
# each runs about half as fast as alone, since the device serialises their
# kernels; their memory adds up, and a third that does not fit fails.
. "$(dirname "$0")/common.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
export LD_LIBRARY_PATH="$libexec/sim" GPUSHARE_SIM_MEMORY=8GiB
workload="$libexec/gpushare-workload"
job=(--iterations 40 --kernels-per-iter 1 --kernel-us 5000 --verify 1MiB)
elapsed() { jq -r 'select(.kind=="workload-summary") | .elapsed_ms | floor' "$1"; }

expect_exit 0 "$workload" "${job[@]}" --mem 3GiB
solo=$(elapsed "$scratch/out")
[ "$solo" -ge 200 ] || fail "40 x 5 ms took $solo ms alone"

"$workload" "${job[@]}" --mem 3GiB --label a >"$scratch/a.out" &
"$workload" "${job[@]}" --mem 3GiB --label b >"$scratch/b.out" &
wait
a=$(elapsed "$scratch/a.out")
b=$(elapsed "$scratch/b.out")
echo "alone $solo ms; together $a ms and $b ms"
[ "$a" -ge 280 ] && [ "$b" -ge 280 ] || fail "together they took $a and $b ms: not sharing one device"

# 3 x (3 GiB + 256 MiB of context) does not fit in 8 GiB: exactly one fails.
# (100 iterations: long enough for all three to overlap.)
for label in a b c; do
  "$workload" --iterations 100 --kernels-per-iter 1 --kernel-us 5000 --verify 1MiB --mem 3GiB --label $label >"$scratch/$label.out" 2>"$scratch/$label.err" &
done
failed=0
for _ in a b c; do wait -n || failed=$((failed + 1)); done
[ "$failed" = 1 ] || fail "$failed of three 3 GiB jobs failed on an 8 GiB device, expected 1"
cat "$scratch"/[abc].err | grep -q 'cuMemAlloc_v2(3221225472 bytes): CUDA_ERROR_OUT_OF_MEMORY' ||
  fail "the failed job did not report running out of memory"
