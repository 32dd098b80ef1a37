#!/usr/bin/env bash
# Suspend and kills on the simulated GPU (1 GiB, a slow 0.25 GB/s host link so
# that a 768 MiB suspend takes about 3 s): killing a job in the middle
# of its suspend leaks no device memory (NVML shows the device empty once
# it is gone); killing the coordinator while a job is suspended leaves the
# job able to run: with nobody left to resume it, the job brings its memory
# back itself before its held launches go, and its data checks out; a
# restarted coordinator takes it back running, not paused.
# (The interposer's path: serve --checkpoint off, since interpose.inc gives
# the coordinator the simulated driver; e2e/mem-suspend-checkpoint tests the
# driver's.)
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"
. "$e2e_dir/mem.inc"
export GPUSHARE_SIM_MEMORY=1GiB GPUSHARE_SIM_EVICT=off GPUSHARE_SIM_CTX_OVERHEAD=0
export GPUSHARE_SIM_PCIE_GBPS=0.25
nvml_empty() {
  local used
  used=$(GPUSHARE_DISABLE=1 gpushare-run --sim -- "$c" nvml |
    jq -r 'select(.step=="nvml") | .nvml_used_bytes')
  [ "$used" = 0 ]
}

start_coordinator --checkpoint off
gpushare-run --sim --suspendable --name victim -- "$c" init ctx alloc:plain:256MiB fill:1 \
  alloc:plain:256MiB fill:2 alloc:plain:256MiB fill:3 ready:"$s/victim" wait:"$s/never" \
  >"$s/victim.out" 2>&1 &
victim=$!
wait_for "the victim's 768 MiB" 10 test -e "$s/victim"
wait_for "the victim registered" 5 gpushare-ctl show victim
gpushare-ctl suspend --no-wait victim >/dev/null
# Mid-suspend: an allocation moved, the last not yet (a tick moves 250 ms
# worth; one allocation takes about 1.07 s on this link).
wait_for "the victim half suspended" 10 \
  show_has victim ".state == \"suspending\" and .mem_suspended_bytes > 0"
kill -KILL "$victim"
wait "$victim" 2>/dev/null || true
wait_for "the victim's device memory freed" 10 nvml_empty

# The coordinator dies while a job is suspended.
gpushare-run --sim --suspendable --name orphan -- "$c" init ctx kernel:spin alloc:plain:64MiB \
  fill:6 ready:"$s/orphan" wait:"$s/suspended" launch:2:1000 sync check:6 \
  ready:"$s/orphan-checked" wait:"$s/orphan-exit" launch:1:1000 sync >"$s/orphan.out" 2>&1 &
orphan=$!
wait_for "the orphan's memory" 10 test -e "$s/orphan"
wait_for "the orphan registered" 5 gpushare-ctl show orphan
gpushare-ctl suspend orphan >"$s/suspend.json" || fail "suspend: $(cat "$s/suspend.json")"
jq -e '.state == "suspended"' "$s/suspend.json" >/dev/null || fail "$(cat "$s/suspend.json")"
touch "$s/suspended"
stop_coordinator KILL
wait_for "the orphan's data checked" 20 test -e "$s/orphan-checked"
[ "$(field "$s/orphan.out" check result)" = CUDA_SUCCESS ] ||
  fail "the orphan's data: $(cat "$s/orphan.out")"
# A restarted coordinator takes the job back running: the suspend's pause
# is not among the decisions it restores.
start_coordinator --checkpoint off
wait_for "the orphan registered again" 10 gpushare-ctl show orphan
show_has orphan '.state == "running"' ||
  fail "after the coordinator's restart: $(gpushare-ctl show orphan)"
touch "$s/orphan-exit"
wait "$orphan" || fail "the orphan failed after the coordinator died: $(cat "$s/orphan.out")"
