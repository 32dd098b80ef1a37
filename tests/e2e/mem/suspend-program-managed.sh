#!/usr/bin/env bash
# Suspend accepts the program's own managed memory: an opportunistic
# --suspendable gpushare-workload whose working set is its own
# cuMemAllocManaged (--alloc managed, 512 MiB on a simulated 1 GiB GPU,
# eviction off) is counted spillable (device-resident) in show, ls and node;
# gpushare-ctl suspend moves it to the host by prefetch (exit 0, suspended,
# host-resident), which makes room for an urgent production job that fits
# only then; resumed, it comes back and the workload's checksums verify it.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"
. "$e2e_dir/mem.inc"
# The sizes below assume a 256 MiB context (the default is the H100's 524 MiB).
export GPUSHARE_SIM_MEMORY=1GiB GPUSHARE_SIM_EVICT=off GPUSHARE_SIM_CTX_OVERHEAD=256MiB
w="$libexec/gpushare-workload"

start_coordinator
gpushare-run --sim --opportunistic --suspendable --name train -- "$w" --mem 512MiB \
  --alloc managed --duration 8 >"$s/train.out" 2>&1 &
train=$!
wait_for "the workload registered with its working set" 10 \
  show_has train ".launches > 0 and .mem_device_resident_bytes >= $((512 * MiB))"
gpushare-ctl show train >"$s/show.json"
jq -e ".mem_device_resident_bytes == $((512 * MiB)) and .mem_host_resident_bytes == 0" \
  "$s/show.json" >/dev/null || fail "show does not count the program's managed memory: $(cat "$s/show.json")"
gpushare-ctl node >"$s/node.json"
jq -se "map(select(.kind == \"device\"))[0].opportunistic.mem_device_resident_bytes == $((512 * MiB))" \
  "$s/node.json" >/dev/null || fail "node does not count it: $(cat "$s/node.json")"

gpushare-ctl suspend train >"$s/suspend.json" 2>"$s/suspend.err" ||
  fail "suspend refused the program's managed memory: $(cat "$s/suspend.json" "$s/suspend.err")"
jq -e ".state == \"suspended\" and .mem_host_resident_bytes == $((512 * MiB)) and
       .mem_device_resident_bytes == 0" "$s/suspend.json" >/dev/null ||
  fail "after suspend: $(cat "$s/suspend.json")"
gpushare-ctl ls | jq -e "select(.name == \"train\") | .mem_host_resident_bytes == $((512 * MiB))" \
  >/dev/null || fail "ls after suspend: $(gpushare-ctl ls)"
gpushare-run --sim --name urgent -- "$w" --mem 384MiB --iterations 20 >"$s/urgent.out" 2>&1 ||
  fail "the urgent job found no room: $(cat "$s/urgent.out")"
gpushare-ctl resume train >"$s/resume.json" || fail "resume: $(cat "$s/resume.json")"
jq -e '.state == "running"' "$s/resume.json" >/dev/null || fail "resume: $(cat "$s/resume.json")"
wait "$train" || fail "the workload failed: $(cat "$s/train.out")"
jq -se 'map(select(.kind == "workload-summary"))[0] | .verified_bytes > 0 and .iterations > 0' \
  "$s/train.out" >/dev/null || fail "no verified summary: $(cat "$s/train.out")"
