#!/usr/bin/env bash
# Suspend on the simulated GPU (1 GiB, eviction off): a production job
# started suspendable holds 640 MiB of plain memory (cuMemAlloc and pitch,
# VMM-backed under the interposer). `gpushare-ctl suspend` moves it to the
# host: show says suspended with 640 MiB host-resident, NVML shows it free,
# and another job can allocate 800 MiB, which fits only then. The suspended
# job's next copy (and launch) is held. `resume` maps it back at the same addresses;
# the held launch runs and the job's data checks out. Suspending twice and
# resuming a running job are no-ops that say so.
# (The interposer's path: serve --checkpoint off, since interpose.inc gives
# the coordinator the simulated driver; e2e/mem-suspend-checkpoint tests the
# driver's.)
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"
. "$e2e_dir/mem.inc"
export GPUSHARE_SIM_MEMORY=1GiB GPUSHARE_SIM_EVICT=off GPUSHARE_SIM_CTX_OVERHEAD=0

start_coordinator --checkpoint off
gpushare-run --sim --suspendable --name susp -- "$c" init ctx kernel:spin \
  alloc:pitch:128MiB fill:4 alloc:plain:512MiB fill:3 ready:"$s/full" wait:"$s/suspended" \
  check:3 launch:3:1000 sync fill:8 check:8 >"$s/susp.out" 2>"$s/susp.err" &
susp=$!
wait_for "the suspendable job's 640 MiB" 10 test -e "$s/full"

gpushare-ctl suspend susp >"$s/suspend.json" || fail "suspend failed: $(cat "$s/suspend.json")"
jq -e ".state == \"suspended\" and .mem_suspended_bytes == $((640 * MiB)) and
       .mem_host_resident_bytes == $((640 * MiB))" "$s/suspend.json" >/dev/null ||
  fail "after suspend: $(cat "$s/suspend.json")"
gpushare-ctl suspend susp >"$s/again.json" || fail "a second suspend failed"
jq -e '.note == "already suspended" and .state == "suspended"' "$s/again.json" >/dev/null ||
  fail "a second suspend: $(cat "$s/again.json")"

# The device memory is free: NVML says so, and another job gets it.
touch "$s/suspended"
GPUSHARE_DISABLE=1 gpushare-run --sim -- "$c" nvml >"$s/nvml.out" 2>&1 ||
  fail "NVML: $(cat "$s/nvml.out")"
[ "$(field "$s/nvml.out" nvml nvml_used_bytes)" -lt $((64 * MiB)) ] ||
  fail "NVML after suspend: $(cat "$s/nvml.out")"
gpushare-run --sim --name other -- "$c" init ctx alloc:plain:800MiB fill:9 check:9 free \
  >"$s/other.out" 2>&1 || fail "the other job failed: $(cat "$s/other.out")"
# The memory arbiter sees the room too: an opportunistic job's 512 MiB
# (which fits only while the other job is suspended) keeps no
# device-resident target. Counting the suspended 640 MiB as held, the
# arbiter would set 384 MiB within a 25 ms tick; watched for 0.5 s (under
# load the window may miss that fault, never invent it).
gpushare-run --sim --opportunistic --name opp -- "$c" init ctx alloc:plain:512MiB \
  ready:"$s/opp" wait:"$s/opp-go" >"$s/opp.out" 2>&1 &
opp=$!
wait_for "the opportunistic job's allocation" 10 test -e "$s/opp"
wait_for "its memory on the device in show" 5 \
  show_has opp ".mem_device_resident_bytes == $((512 * MiB))"
deadline=$(( $(now_ms) + 500 ))
while [ "$(now_ms)" -lt "$deadline" ]; do
  show_has opp '.devices[0].device_resident_target == null' ||
    fail "the suspended job's memory counted on the device: $(gpushare-ctl show opp)"
done
touch "$s/opp-go"
wait "$opp" || fail "the opportunistic job failed: $(cat "$s/opp.out")"

# The suspended job is held at its copy, not finished.
kill -0 "$susp" || fail "the suspended job exited: $(cat "$s/susp.out" "$s/susp.err")"
[ -z "$(field "$s/susp.out" check result)" ] ||
  fail "a suspended job's copy ran: $(cat "$s/susp.out")"

gpushare-ctl resume susp >"$s/resume.json" || fail "resume failed: $(cat "$s/resume.json")"
jq -e '.state == "running" and .mem_host_resident_bytes == 0' "$s/resume.json" >/dev/null ||
  fail "after resume: $(cat "$s/resume.json")"
wait "$susp" || fail "the suspended job failed after resume: $(cat "$s/susp.out" "$s/susp.err")"
[ "$(field "$s/susp.out" check result 1)" = CUDA_SUCCESS ] &&
  [ "$(field "$s/susp.out" check result 2)" = CUDA_SUCCESS ] || fail "its data: $(cat "$s/susp.out")"

# A suspended job's allocation waits for its resume: no new device memory
# while suspended.
gpushare-run --sim --suspendable --name late -- "$c" init ctx alloc:plain:64MiB \
  ready:"$s/late" wait:"$s/late-suspended" ready:"$s/late-allocating" alloc:plain:64MiB \
  >"$s/late.out" 2>&1 &
late=$!
wait_for "the late job's first allocation" 10 test -e "$s/late"
wait_for "the late job registered" 5 gpushare-ctl show late
gpushare-ctl suspend late >/dev/null || fail "suspend of the late job"
touch "$s/late-suspended"
wait_for "the late job at its second allocation" 10 test -e "$s/late-allocating"
show_has late ".mem_used_bytes == $((64 * MiB)) and .state == \"suspended\"" ||
  fail "a suspended job allocated: $(gpushare-ctl show late)"
[ "$(jq -s 'map(select(.step == "alloc")) | length' "$s/late.out")" = 1 ] ||
  fail "a suspended job's allocation returned: $(cat "$s/late.out")"
gpushare-ctl resume late >"$s/late-resume.json" 2>&1 || fail "resume of the late job: $(cat "$s/late-resume.json")"
wait "$late" || fail "the late job failed: $(cat "$s/late.out")"
[ "$(jq -s 'map(select(.step == "alloc" and .result == "CUDA_SUCCESS")) | length' "$s/late.out")" = 2 ] ||
  fail "the late job's allocation after resume: $(cat "$s/late.out")"

# Resuming a running job changes nothing and says so.
gpushare-run --sim --name idle -- "$c" init ctx ready:"$s/idle" wait:"$s/idle-go" \
  >"$s/idle.out" 2>&1 &
idle=$!
wait_for "the idle job" 10 test -e "$s/idle"
wait_for "the idle job registered" 5 gpushare-ctl show idle
gpushare-ctl resume idle >"$s/noop.json" || fail "resume of a running job failed"
jq -e '.state == "running" and (.note | test("nothing to resume"))' "$s/noop.json" >/dev/null ||
  fail "resume of a running job: $(cat "$s/noop.json")"
touch "$s/idle-go"
wait "$idle"
