#!/usr/bin/env bash
# A production job whose memory is all its own cuMemAllocManaged, started
# without --suspendable: ls counts its 1 GiB device-resident, and
# gpushare-ctl suspend moves it to the host by prefetch (managed memory
# can live there) instead of refusing it as "plain device memory not
# allocated suspendable"; ls then counts it host-resident; resumed, it
# comes back and the workload's checksums verify its data.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"
export GPUSHARE_SIM_MEMORY=4GiB GPUSHARE_SIM_CTX_OVERHEAD=256MiB
w="$libexec/gpushare-workload"
s=$scratch
GiB=1073741824

start_coordinator
gpushare-run --sim --production --name om -- "$w" --mem 1GiB --alloc managed --duration 6 \
  >"$s/om.out" 2>&1 &
om=$!
wait_for "the workload registered with its working set" 10 sh -c \
  "gpushare-ctl show om | jq -se '.[0] | .launches > 0'"
gpushare-ctl ls | jq -se "map(select(.name == \"om\"))[0] | .mem_device_resident_bytes == $GiB and
  .mem_host_resident_bytes == 0" >/dev/null ||
  fail "ls does not count the job's managed memory: $(gpushare-ctl ls)"

gpushare-ctl suspend om >"$s/suspend.json" 2>"$s/suspend.err" ||
  fail "suspend refused: $(cat "$s/suspend.json" "$s/suspend.err")"
jq -se ".[0] | .state == \"suspended\" and .mem_host_resident_bytes == $GiB and
       .mem_device_resident_bytes == 0" "$s/suspend.json" >/dev/null ||
  fail "after suspend: $(cat "$s/suspend.json")"
gpushare-ctl ls | jq -se "map(select(.name == \"om\"))[0] | .mem_host_resident_bytes == $GiB" \
  >/dev/null || fail "ls after suspend: $(gpushare-ctl ls)"
gpushare-ctl resume om >"$s/resume.json" || fail "resume: $(cat "$s/resume.json")"
jq -se '.[0] | .state == "running"' "$s/resume.json" >/dev/null || fail "resume: $(cat "$s/resume.json")"
wait_for "its memory back on the device" 5 sh -c \
  "gpushare-ctl show om | jq -se '.[0] | .mem_device_resident_bytes == $GiB'"
wait "$om" || fail "the workload failed: $(cat "$s/om.out")"
jq -se 'map(select(.kind == "workload-summary"))[0] | .verified_bytes > 0 and .iterations > 0' \
  "$s/om.out" >/dev/null || fail "no verified summary: $(cat "$s/om.out")"
