#!/usr/bin/env bash
# Killing the coordinator (SIGKILL) while an opportunistic
# job spills for a production allocation (a slow 1 GB/s link: the 512 MiB
# move takes half a second) loses no job's data and leaks no device
# memory. The job finishes the spill it started, so the production
# allocation succeeds; both keep their memory while no coordinator runs; a
# new coordinator takes them back, and once the production job exits the
# opportunistic memory returns to the device. All data checks, and once
# both jobs exit the simulator's used memory is back to its baseline.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"
. "$e2e_dir/mem.inc"
export GPUSHARE_SIM_MEMORY=1GiB GPUSHARE_SIM_EVICT=off GPUSHARE_SIM_CTX_OVERHEAD=0
export GPUSHARE_SIM_PCIE_GBPS=1

baseline=$(free_bytes before)
start_coordinator
start_opp_768 wait:"$s/prod-done" check:7 ready:"$s/opp-checked" wait:"$s/restored" \
  managed-stats check:7 free check:3 free
gpushare-run --sim --no-coordinator --name prod -- "$c" init ctx alloc:plain:640MiB fill:5 \
  ready:"$s/prod-done" wait:"$s/prod-go" check:5 >"$s/prod.out" 2>"$s/prod.err" &
prod=$!
wait_for "the opportunistic job's spill under way" 10 spilling "$opp" $((768 * MiB))
stop_coordinator KILL
wait_for "the production allocation" 10 test -e "$s/prod-done"
[ "$(field "$s/prod.out" alloc result)" = CUDA_SUCCESS ] || fail "production: $(cat "$s/prod.out")"
wait_for "the opportunistic job's check while spilled" 10 test -e "$s/opp-checked"

start_coordinator
wait_for "both jobs registered again" 20 sh -c \
  "gpushare-ctl show opp && gpushare-ctl show prod"
touch "$s/prod-go"
wait "$prod" || fail "the production job failed: $(cat "$s/prod.out" "$s/prod.err")"
wait_for "the opportunistic job's memory back on the device" 10 restored opp "$opp" $((768 * MiB))
touch "$s/restored"
wait "$opp" || fail "the opportunistic job lost data or failed: $(cat "$s/opp.out" "$s/opp.err")"
[ "$(field "$s/opp.out" managed-stats device_bytes)" = $((768 * MiB)) ] ||
  fail "the simulator does not have its memory on the device: $(cat "$s/opp.out")"
expect_free "$baseline"
