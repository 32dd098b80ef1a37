#!/usr/bin/env bash
# Killing the production job while the opportunistic job is
# spilling for it (a slow 1 GB/s link: the 512 MiB move takes half a
# second) loses none of the opportunistic job's data and leaks no device
# memory: its memory comes back to the device once the production job is
# gone, both its allocations check, and once it exits the whole device is
# free again (the simulator's used memory is back to its baseline).
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"
. "$e2e_dir/mem.inc"
export GPUSHARE_SIM_MEMORY=1GiB GPUSHARE_SIM_EVICT=off GPUSHARE_SIM_CTX_OVERHEAD=0
export GPUSHARE_SIM_PCIE_GBPS=1

baseline=$(free_bytes before)
start_coordinator
start_opp_768 wait:"$s/prod-gone" managed-stats check:7 free check:3 free
gpushare-run --sim --name prod -- "$c" init ctx alloc:plain:640MiB fill:5 hold \
  >"$s/prod.out" 2>"$s/prod.err" </dev/null &
prod=$!
wait_for "the opportunistic job's spill under way" 10 spilling "$opp" $((768 * MiB))
kill -KILL "$prod"
wait "$prod" 2>/dev/null || true
wait_for "the production job gone from ls" 5 sh -c "! gpushare-ctl show prod"
wait_for "the opportunistic job's memory back on the device" 10 restored opp "$opp" $((768 * MiB))
touch "$s/prod-gone"
wait "$opp" || fail "the opportunistic job lost data or failed: $(cat "$s/opp.out" "$s/opp.err")"
[ "$(field "$s/opp.out" managed-stats device_bytes)" = $((768 * MiB)) ] ||
  fail "the simulator does not have its memory on the device: $(cat "$s/opp.out")"
expect_free "$baseline"
