#!/usr/bin/env bash
# Killing the opportunistic job in the middle of its spill (a
# slow 1 GB/s link, so the 512 MiB move takes half a second) loses nothing
# of the production job and leaks no device memory: the production
# allocation succeeds, and once both jobs are gone the whole device is free.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"
. "$e2e_dir/mem.inc"
export GPUSHARE_SIM_MEMORY=1GiB GPUSHARE_SIM_EVICT=off GPUSHARE_SIM_CTX_OVERHEAD=0
export GPUSHARE_SIM_PCIE_GBPS=1

start_coordinator
start_opp_768 wait:"$s/never"
gpushare-run --sim --name prod -- "$c" init ctx alloc:plain:640MiB fill:5 check:5 \
  >"$s/prod.out" 2>"$s/prod.err" &
prod=$!
wait_for "a spill target for the opportunistic job" 5 \
  show_has opp ".devices[0].device_resident_target != null"
kill -KILL "$opp"
wait "$opp" 2>/dev/null || true
wait "$prod" || fail "the production job failed: $(cat "$s/prod.out" "$s/prod.err")"
[ "$(field "$s/prod.out" check result)" = CUDA_SUCCESS ] || fail "production: $(cat "$s/prod.out")"
expect_free $((1024 * MiB))
