#!/usr/bin/env bash
# A production allocation that no spill can make room for (another
# production job holds the device) fails with out-of-memory as soon as the
# coordinator's arbiter has judged it, not at the end of its 2 s wait for a
# spill. The fault this
# catches is the full wait: a refusal in under 1.5 s is far above the
# verdict's 25 ms tick on a loaded machine and below the 2 s wait. That an
# allocation a spill can serve still waits and succeeds is mem-spill's and
# mem-stress's (100 cycles, 0 failed production allocations).
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"
. "$e2e_dir/mem.inc"
export GPUSHARE_SIM_MEMORY=1GiB GPUSHARE_SIM_EVICT=off GPUSHARE_SIM_CTX_OVERHEAD=0

start_coordinator
gpushare-run --sim --name holder -- "$c" init ctx alloc:plain:768MiB ready:"$s/held" \
  wait:"$s/release" >"$s/holder.out" 2>"$s/holder.err" &
holder=$!
wait_for "the first production job's 768 MiB" 10 test -e "$s/held"
wait_for "the first production job to register" 5 \
  sh -c 'gpushare-ctl ls | jq -e "select(.name == \"holder\")" >/dev/null'

status=0
gpushare-run --sim --name late -- "$c" init ctx alloc:plain:512MiB >"$s/late.out" \
  2>"$s/late.err" || status=$?
[ "$status" -ne 0 ] || fail "512 MiB fitted beside 768 MiB on a 1 GiB device: $(cat "$s/late.out")"
expect_grep '"step":"alloc","result":"CUDA_ERROR_OUT_OF_MEMORY"' "$s/late.out"
wall=$(jq -r 'select(.step == "alloc") | .wall_ms' "$s/late.out")
awk -v ms="$wall" 'BEGIN { exit !(ms < 1500) }' ||
  fail "the refusal took $wall ms: the allocation waited for a spill no one could make"

touch "$s/release"
wait "$holder" || fail "the first production job failed: $(cat "$s/holder.out" "$s/holder.err")"
