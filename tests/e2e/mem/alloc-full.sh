#!/usr/bin/env bash
# An opportunistic allocation that the device's free memory
# cannot hold starts on the host (counted there, so ls and the simulator
# agree) and comes to the device once a production job frees the room;
# its data survives both.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"
. "$e2e_dir/mem.inc"
export GPUSHARE_SIM_MEMORY=1GiB GPUSHARE_SIM_EVICT=off GPUSHARE_SIM_CTX_OVERHEAD=0

start_coordinator
gpushare-run --sim --name prod -- "$c" init ctx alloc:plain:768MiB ready:"$s/prod-full" \
  wait:"$s/prod-go" >"$s/prod.out" 2>"$s/prod.err" &
prod=$!
wait_for "the production job's 768 MiB" 10 test -e "$s/prod-full"
gpushare-run --sim --opportunistic --name opp -- "$c" init ctx alloc:plain:512MiB fill:4 \
  managed-stats ready:"$s/opp-full" wait:"$s/restored" managed-stats check:4 \
  >"$s/opp.out" 2>"$s/opp.err" &
opp=$!
wait_for "the opportunistic allocation" 10 test -e "$s/opp-full"
[ "$(field "$s/opp.out" managed-stats device_bytes 1)" = 0 ] ||
  fail "an allocation the device could not hold is on it: $(cat "$s/opp.out")"
wait_for "ls to show it on the host" 5 resident opp 0 $((512 * MiB))
touch "$s/prod-go"
wait "$prod" || fail "the production job failed: $(cat "$s/prod.out" "$s/prod.err")"
wait_for "it on the device once the production job left" 10 resident opp $((512 * MiB)) 0
touch "$s/restored"
wait "$opp" || fail "the opportunistic job failed: $(cat "$s/opp.out" "$s/opp.err")"
[ "$(field "$s/opp.out" managed-stats device_bytes 2)" = $((512 * MiB)) ] ||
  fail "the simulator does not have it on the device: $(cat "$s/opp.out")"
