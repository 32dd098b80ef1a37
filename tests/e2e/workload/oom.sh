#!/usr/bin/env bash
# A CUDA error makes gpushare-workload exit 1 naming the call, its size
# and the error: out of memory for the working set, a pool allocation, and
# memory grown inside an iteration.
. "$(dirname "$0")/../common.inc"
use_sim GPUSHARE_SIM_MEMORY=2GiB
workload="$libexec/gpushare-workload"

expect_exit 1 "$workload" --mem 3GiB
[ "$(cat "$scratch/err")" = \
  "gpushare-workload: error: cuMemAlloc_v2(3221225472 bytes): CUDA_ERROR_OUT_OF_MEMORY" ] ||
  { cat "$scratch/err"; fail "unexpected error message"; }
[ ! -s "$scratch/out" ] || fail "a failed run printed a summary"
expect_exit 1 "$workload" --mem 3GiB --alloc async
expect_grep '^gpushare-workload: error: cuMemAllocAsync\(3221225472 bytes\): CUDA_ERROR_OUT_OF_MEMORY$' "$scratch/err"
expect_exit 1 "$workload" --mem 1GiB --grow 1GiB --iterations 2 --per-iteration
expect_grep '^gpushare-workload: error: cuMemAlloc_v2\(1073741824 bytes\): CUDA_ERROR_OUT_OF_MEMORY$' "$scratch/err"
[ ! -s "$scratch/out" ] || fail "the first iteration should already have failed"
