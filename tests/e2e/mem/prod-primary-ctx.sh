#!/usr/bin/env bash
# A production job's primary context waits for a spill exactly as its
# allocations do. On a 1 GiB simulated GPU (contexts of 128 MiB, eviction
# off, so only a spill makes room) an opportunistic job holds its context
# and 832 MiB, leaving 64 MiB: a production gpushare-workload's first CUDA
# step, cuDevicePrimaryCtxRetain (what the CUDA runtime and PyTorch use),
# finds no room for its context. It must wait while the opportunistic
# memory moves to the host and then run to the end, not fail at once with
# `cuDevicePrimaryCtxRetain: CUDA_ERROR_OUT_OF_MEMORY`. The opportunistic
# job's data survives.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"
. "$e2e_dir/mem.inc"
export GPUSHARE_SIM_MEMORY=1GiB GPUSHARE_SIM_EVICT=off GPUSHARE_SIM_CTX_OVERHEAD=128MiB
w="$libexec/gpushare-workload"

start_coordinator
gpushare-run --sim --opportunistic --name opp -- "$c" init ctx alloc:plain:832MiB fill:7 \
  ready:"$s/opp-full" wait:"$s/prod-done" check:7 >"$s/opp.out" 2>"$s/opp.err" &
opp=$!
wait_for "the opportunistic job's 832 MiB" 10 test -e "$s/opp-full"
wait_for "the opportunistic job to register" 5 sh -c \
  "gpushare-ctl show opp | jq -se 'length == 1 and .[0].mem_device_resident_bytes == $((832 * MiB))'"

status=0
gpushare-run --sim --name prod -- "$w" --mem 128MiB --iterations 3 --kernel-us 100 \
  >"$s/prod.out" 2>"$s/prod.err" || status=$?
touch "$s/prod-done"
[ "$status" -eq 0 ] || fail "the production job exited $status: $(cat "$s/prod.err")"
grep -q 'CUDA_ERROR_OUT_OF_MEMORY' "$s/prod.err" && fail "production: $(cat "$s/prod.err")"
wait "$opp" || fail "the opportunistic job failed: $(cat "$s/opp.out" "$s/opp.err")"
expect_grep '"step":"check","result":"CUDA_SUCCESS"' "$s/opp.out"
echo "mem-prod-primary-ctx: ok"
