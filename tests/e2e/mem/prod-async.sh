#!/usr/bin/env bash
# A production job's stream-ordered allocations (cuMemAllocAsync
# from the device's pool, cuMemAllocFromPoolAsync from its own) that fit its
# limit but not the device, because an opportunistic job holds the room,
# wait for the opportunistic memory to spill and succeed, as cuMemAlloc
# does; the opportunistic job's data survives.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"
. "$e2e_dir/mem.inc"
export GPUSHARE_SIM_MEMORY=1GiB GPUSHARE_SIM_EVICT=off GPUSHARE_SIM_CTX_OVERHEAD=0

start_coordinator
start_opp_768 wait:"$s/prod-done" check:7 free check:3
gpushare-run --sim --name prod -- "$c" init ctx stream alloc:async:384MiB fill:5 \
  alloc:pool:384MiB fill:6 check:6 >"$s/prod.out" 2>"$s/prod.err" ||
  fail "a production stream-ordered allocation failed: $(cat "$s/prod.out" "$s/prod.err")"
[ "$(jq -s '[.[] | select(.step=="alloc" and .result=="CUDA_SUCCESS")] | length' "$s/prod.out")" = 2 ] ||
  fail "production: $(cat "$s/prod.out")"
touch "$s/prod-done"
wait "$opp" || fail "the opportunistic job lost data or failed: $(cat "$s/opp.out" "$s/opp.err")"
