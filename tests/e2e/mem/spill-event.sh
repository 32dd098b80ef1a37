#!/usr/bin/env bash
# The spill and the restore start on events, not on the memory loop's
# tick: with the coordinator's memory tick set to an hour, a production
# allocation that needs opportunistic memory moved still succeeds, within
# a second (the transfer is 11 ms at the link model's 51 GB/s; the room
# wait gives up after 2 s, so a spill that waited for the tick would fail),
# and the opportunistic memory comes back within seconds of the production
# job freeing its memory (while it lives) and of a production job's exit.
# The opportunistic job's data survives all of it.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"
. "$e2e_dir/mem.inc"
export GPUSHARE_SIM_MEMORY=1GiB GPUSHARE_SIM_EVICT=off GPUSHARE_SIM_CTX_OVERHEAD=0

start_coordinator --memory-tick 1h
# Four allocations, so that the spill is a batch of several.
GPUSHARE_LOG=info gpushare-run --sim --opportunistic --name opp -- "$c" init ctx \
  alloc:plain:256MiB fill:3 alloc:plain:192MiB fill:4 alloc:plain:192MiB fill:5 \
  alloc:plain:128MiB fill:7 ready:"$s/opp-full" wait:"$s/prod-done" \
  wait:"$s/restored" managed-stats check:7 >"$s/opp.out" 2>"$s/opp.err" &
opp=$!
wait_for "the opportunistic job's 768 MiB" 10 test -e "$s/opp-full"
wait_for "its 768 MiB on the device in ls" 5 \
  show_has opp ".mem_device_resident_bytes == $((768 * MiB))"

# Spilled for a production job that then frees its memory and stays: the
# free tells the coordinator, and the memory comes back while it lives.
gpushare-run --sim --name prod -- "$c" init ctx ?alloc:plain:640MiB free ready:"$s/freed" \
  wait:"$s/back" >"$s/prod.out" 2>"$s/prod.err" &
prod=$!
wait_for "the production job's free" 10 test -e "$s/freed"
[ "$(field "$s/prod.out" alloc result)" = CUDA_SUCCESS ] ||
  fail "the production allocation waited for a tick that never came: $(cat "$s/prod.out")"
ms=$(field "$s/prod.out" alloc wall_ms)
jq -ne "$ms < 1000" >/dev/null || fail "the production allocation took $ms ms"
grep -q "spilled [1-9][0-9]* allocations" "$s/opp.err" || fail "no spill logged: $(cat "$s/opp.err")"
wait_for "its memory back on the device after the free, without a tick" 5 \
  show_has opp ".mem_host_resident_bytes == 0"
touch "$s/back"
wait "$prod" || fail "the production job failed: $(cat "$s/prod.out" "$s/prod.err")"

# Spilled again for one that exits holding its memory: its end is room.
gpushare-run --sim --name prod2 -- "$c" init ctx ?alloc:plain:640MiB >"$s/prod2.out" 2>&1 ||
  fail "the second production job failed: $(cat "$s/prod2.out")"
touch "$s/prod-done"
[ "$(field "$s/prod2.out" alloc result)" = CUDA_SUCCESS ] ||
  fail "the second production allocation: $(cat "$s/prod2.out")"
[ "$(grep -c "spilled [1-9][0-9]* allocations" "$s/opp.err")" -ge 2 ] ||
  fail "no second spill logged: $(cat "$s/opp.err")"
wait_for "its memory back on the device after the exit, without a tick" 5 \
  show_has opp ".mem_host_resident_bytes == 0 and .mem_device_resident_bytes == $((768 * MiB))"
touch "$s/restored"
wait "$opp" || fail "the opportunistic job failed: $(cat "$s/opp.out" "$s/opp.err")"
[ "$(field "$s/opp.out" managed-stats device_bytes)" = $((768 * MiB)) ] ||
  fail "after the production jobs: $(cat "$s/opp.out")"
[ "$(grep -c "restored [1-9][0-9]* allocations" "$s/opp.err")" -ge 2 ] ||
  fail "not two restores logged: $(cat "$s/opp.err")"

# The option's bounds.
expect_exit 2 gpushare-ctl serve --memory-tick 0s
echo "production allocation with a spill, memory tick 1h: $ms ms"
