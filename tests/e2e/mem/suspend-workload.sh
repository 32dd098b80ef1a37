#!/usr/bin/env bash
# Gpushare-workload, started --suspendable, trains over a
# 512 MiB working set on a simulated 1 GiB GPU (256 MiB per context, no
# eviction); suspended mid-run, its memory makes room for an urgent job
# that fits only then (384 MiB beside two contexts); resumed, it finishes
# and its checksums verify its working set: nothing was lost on the way to
# the host and back. Both are checked twice (two suspend/resume cycles).
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"
. "$e2e_dir/mem.inc"
export GPUSHARE_SIM_MEMORY=1GiB GPUSHARE_SIM_EVICT=off GPUSHARE_SIM_CTX_OVERHEAD=256MiB
w="$libexec/gpushare-workload"

start_coordinator
gpushare-run --sim --suspendable --name train -- "$w" --mem 512MiB --duration 6 \
  >"$s/train.out" 2>&1 &
train=$!
wait_for "the workload registered with its working set" 10 \
  show_has train ".mem_used_bytes >= 805306368 and .launches > 0"
for cycle in 1 2; do
  gpushare-ctl suspend train >"$s/suspend.json" || fail "suspend $cycle: $(cat "$s/suspend.json")"
  jq -e '.state == "suspended" and .mem_host_resident_bytes == 536870912' "$s/suspend.json" \
    >/dev/null || fail "suspend $cycle: $(cat "$s/suspend.json")"
  gpushare-run --sim --name urgent -- "$w" --mem 384MiB --iterations 20 >"$s/urgent.out" 2>&1 ||
    fail "the urgent job failed in cycle $cycle: $(cat "$s/urgent.out")"
  gpushare-ctl resume train >"$s/resume.json" || fail "resume $cycle: $(cat "$s/resume.json")"
  jq -e '.state == "running" and .mem_host_resident_bytes == 0' "$s/resume.json" >/dev/null ||
    fail "resume $cycle: $(cat "$s/resume.json")"
done
wait "$train" || fail "the workload failed: $(cat "$s/train.out")"
jq -se 'map(select(.kind == "workload-summary"))[0] | .verified_bytes > 0 and .iterations > 0' \
  "$s/train.out" >/dev/null || fail "no verified summary: $(cat "$s/train.out")"
