#!/usr/bin/env bash
# Suspend of managed memory on the simulated GPU (1 GiB, eviction off): an opportunistic
# job's cuMemAlloc memory is managed-backed, so any opportunistic job can be
# suspended without --suspendable. Suspend prefetches its 512 MiB to the
# host (the simulator's own count of its device-resident managed bytes
# drops to 0, and a production job gets 900 MiB); resume brings it back to
# the device (as far as the memory arbiter's target allows, the rest as it
# rises); the job's data checks out.
# (The interposer's path: serve --checkpoint off, since interpose.inc gives
# the coordinator the simulated driver; e2e/mem-suspend-checkpoint tests the
# driver's.)
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"
. "$e2e_dir/mem.inc"
export GPUSHARE_SIM_MEMORY=1GiB GPUSHARE_SIM_EVICT=off GPUSHARE_SIM_CTX_OVERHEAD=0

start_coordinator --checkpoint off
gpushare-run --sim --opportunistic --name opp -- "$c" init ctx alloc:plain:512MiB fill:5 \
  ready:"$s/full" wait:"$s/suspended" managed-stats ready:"$s/seen" wait:"$s/resumed" \
  managed-stats check:5 >"$s/opp.out" 2>"$s/opp.err" &
opp=$!
wait_for "the opportunistic job's 512 MiB" 10 test -e "$s/full"
wait_for "the job registered" 5 gpushare-ctl show opp

gpushare-ctl suspend opp >"$s/suspend.json" || fail "suspend failed: $(cat "$s/suspend.json")"
jq -e ".state == \"suspended\" and .mem_host_resident_bytes == $((512 * MiB)) and
       .mem_device_resident_bytes == 0" "$s/suspend.json" >/dev/null ||
  fail "after suspend: $(cat "$s/suspend.json")"
touch "$s/suspended"
wait_for "the job's own view of its memory" 10 test -e "$s/seen"
[ "$(field "$s/opp.out" managed-stats device_bytes 1)" = 0 ] ||
  fail "managed memory on the device while suspended: $(cat "$s/opp.out")"
gpushare-run --sim --name prod -- "$c" init ctx alloc:plain:900MiB fill:2 check:2 free \
  >"$s/prod.out" 2>&1 || fail "the production job failed: $(cat "$s/prod.out")"

gpushare-ctl resume opp >"$s/resume.json" || fail "resume failed: $(cat "$s/resume.json")"
jq -e '.state == "running"' "$s/resume.json" >/dev/null || fail "after resume: $(cat "$s/resume.json")"
# Resume brings managed memory back as far as the arbiter's target allows at
# that moment (it may not yet have seen the production job leave); the rest
# follows once it has.
wait_for "its memory back on the device" 5 \
  show_has opp ".mem_device_resident_bytes == $((512 * MiB)) and .mem_host_resident_bytes == 0"
touch "$s/resumed"
wait "$opp" || fail "the opportunistic job failed: $(cat "$s/opp.out" "$s/opp.err")"
[ "$(field "$s/opp.out" managed-stats device_bytes 2)" = $((512 * MiB)) ] ||
  fail "managed memory after resume: $(cat "$s/opp.out")"
[ "$(field "$s/opp.out" check result)" = CUDA_SUCCESS ] || fail "its data: $(cat "$s/opp.out")"
