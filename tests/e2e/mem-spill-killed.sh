#!/usr/bin/env bash
# Killing the opportunistic job in the middle of its spill (a
# slow 1 GB/s link, so the 512 MiB move takes half a second) loses nothing
# of the production job and leaks no device memory: the production
# allocation succeeds, and once both jobs are gone the whole device is free.
. "$(dirname "$0")/common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"
export GPUSHARE_SIM_MEMORY=1GiB GPUSHARE_SIM_EVICT=off GPUSHARE_SIM_CTX_OVERHEAD=0
export GPUSHARE_SIM_PCIE_GBPS=1
c="$libexec/tests/gpushare-cuda-client"
s=$scratch
MiB=1048576
field() { jq -r "select(.step==\"$2\") | .$3" "$1" | sed -n "${4:-1}p"; }

start_coordinator
gpushare-run --sim --opportunistic --name opp -- "$c" init ctx alloc:plain:256MiB fill:3 \
  alloc:plain:512MiB fill:7 ready:"$s/opp-full" wait:"$s/never" >"$s/opp.out" 2>"$s/opp.err" &
opp=$!
wait_for "the opportunistic job's 768 MiB" 10 test -e "$s/opp-full"
gpushare-run --sim --name prod -- "$c" init ctx alloc:plain:640MiB fill:5 check:5 \
  >"$s/prod.out" 2>"$s/prod.err" &
prod=$!
wait_for "a spill target for the opportunistic job" 5 sh -c \
  "gpushare-ctl show opp | jq -e '.devices[0].device_resident_target != null'"
kill -KILL "$opp"
wait "$opp" 2>/dev/null || true
wait "$prod" || fail "the production job failed: $(cat "$s/prod.out" "$s/prod.err")"
[ "$(field "$s/prod.out" check result)" = CUDA_SUCCESS ] || fail "production: $(cat "$s/prod.out")"
"$c" init ctx info >"$s/after.out" || fail "the last client: $(cat "$s/after.out")"
[ "$(field "$s/after.out" info free_bytes)" = $((1024 * MiB)) ] ||
  fail "device memory leaked: $(cat "$s/after.out")"
