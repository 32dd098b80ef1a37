#!/usr/bin/env bash
# A job that was suspended (or half-way through its suspend) when the
# coordinator died registers with the
# restarted coordinator at once, and undoes the move under it: the new
# coordinator lists it as resuming, with its memory counted, while its
# memory comes back (768 MiB over a slow 0.25 GB/s link: about 3 s); its
# launches stay held until then, and go on after; it ends up running, its
# data intact. (Before, the job brought its memory back first and only then
# registered: invisible to the new coordinator for the whole move.)
# (The interposer's path: serve --checkpoint off, since interpose.inc gives
# the coordinator the simulated driver; e2e/mem-suspend-checkpoint tests the
# driver's.)
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"
. "$e2e_dir/mem.inc"
export GPUSHARE_SIM_MEMORY=1GiB GPUSHARE_SIM_EVICT=off GPUSHARE_SIM_CTX_OVERHEAD=0
export GPUSHARE_SIM_PCIE_GBPS=0.25

start_coordinator --checkpoint off
gpushare-run --sim --suspendable --name mover -- "$c" init ctx kernel:spin \
  alloc:plain:256MiB fill:1 alloc:plain:256MiB fill:2 alloc:plain:256MiB fill:3 \
  ready:"$s/full" wait:"$s/suspended" launch:2:1000 sync check:3 ready:"$s/checked" \
  wait:"$s/exit" >"$s/mover.out" 2>&1 &
mover=$!
wait_for "the job's 768 MiB" 10 test -e "$s/full"
wait_for "the job registered" 5 gpushare-ctl show mover
gpushare-ctl suspend mover >"$s/suspend.json" || fail "suspend: $(cat "$s/suspend.json")"
jq -e '.state == "suspended"' "$s/suspend.json" >/dev/null || fail "$(cat "$s/suspend.json")"
touch "$s/suspended"  # its next launches are held

stop_coordinator KILL
start_coordinator --checkpoint off
wait_for "the job registered with the new coordinator" 10 gpushare-ctl show mover
gpushare-ctl show mover >"$s/first.json"
[ -e "$s/checked" ] && fail "the job ran on before its memory was back: $(cat "$s/mover.out")"
jq -e ".state == \"resuming\" and .mem_used_bytes >= $((768 * MiB))" "$s/first.json" >/dev/null ||
  fail "the new coordinator first saw the job $(jq -c '{state, mem_used_bytes}' "$s/first.json"), not resuming with its memory: it registered only after its move"

wait_for "the job's launches and check" 30 test -e "$s/checked"
[ "$(field "$s/mover.out" check result)" = CUDA_SUCCESS ] || fail "the job's data: $(cat "$s/mover.out")"
[ "$(field "$s/mover.out" launch result)" = CUDA_SUCCESS ] || fail "its launches: $(cat "$s/mover.out")"
wait_for "the job running under the new coordinator" 10 \
  show_has mover ".state == \"running\" and .mem_host_resident_bytes == 0"
touch "$s/exit"
wait "$mover" || fail "the job failed: $(cat "$s/mover.out")"

# The same half-way through the suspend (one of three allocations moved):
# the move stops where it is and comes back under the new coordinator.
gpushare-run --sim --suspendable --name half -- "$c" init ctx kernel:spin \
  alloc:plain:256MiB fill:4 alloc:plain:256MiB fill:5 alloc:plain:256MiB fill:6 \
  ready:"$s/half-full" wait:"$s/half-go" launch:2:1000 sync check:6 ready:"$s/half-checked" \
  wait:"$s/half-exit" >"$s/half.out" 2>&1 &
half=$!
wait_for "the second job's 768 MiB" 10 test -e "$s/half-full"
wait_for "the second job registered" 5 gpushare-ctl show half
gpushare-ctl suspend --no-wait half >/dev/null
wait_for "the second job half suspended" 10 \
  show_has half ".state == \"suspending\" and .mem_suspended_bytes > 0"
stop_coordinator KILL
start_coordinator --checkpoint off
wait_for "the second job registered with the new coordinator" 10 gpushare-ctl show half
gpushare-ctl show half >"$s/half-first.json"
jq -e '.state == "resuming"' "$s/half-first.json" >/dev/null ||
  fail "half-way: the new coordinator first saw the job $(jq -c '{state, mem_used_bytes}' "$s/half-first.json")"
touch "$s/half-go"
wait_for "the second job's check" 30 test -e "$s/half-checked"
[ "$(field "$s/half.out" check result)" = CUDA_SUCCESS ] || fail "half-way: $(cat "$s/half.out")"
wait_for "the second job running" 10 \
  show_has half ".state == \"running\" and .mem_host_resident_bytes == 0"
touch "$s/half-exit"
wait "$half" || fail "the second job failed: $(cat "$s/half.out")"
