#!/usr/bin/env bash
# Memory the driver evicts by itself shows as host-resident. On a simulated
# 1 GiB GPU whose driver evicts managed pages for an allocation that needs
# room (GPUSHARE_SIM_EVICT=on), an opportunistic job holds 768 MiB (managed
# memory preferring the device, under the interposer). A process outside
# gpushare, which the coordinator cannot make room for, then allocates
# 512 MiB: the driver moves 256 MiB of the job's pages to the host. The
# interposer placed nothing there, yet show, ls and node count the 256 MiB
# host-resident (evicted), as the driver's per-process usage (NVML) says,
# and the job's data is intact.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"
export GPUSHARE_SIM_MEMORY=1GiB GPUSHARE_SIM_EVICT=on GPUSHARE_SIM_CTX_OVERHEAD=0
. "$e2e_dir/mem.inc"

start_coordinator
start_opp_768 wait:"$s/done" check:7
wait_for "its 768 MiB on the device in show" 5 sh -c \
  "gpushare-ctl show opp | jq -se '.[0] | .mem_device_resident_bytes == $((768 * MiB))'"

# Outside gpushare: the simulated driver alone, on the same state file.
LD_LIBRARY_PATH="$libexec/sim" "$c" init ctx alloc:plain:512MiB ready:"$s/plain-in" \
  wait:"$s/done" >"$s/plain.out" 2>&1 &
plain=$!
wait_for "the outside allocation" 10 test -e "$s/plain-in"
wait_for "the evicted 256 MiB host-resident in show" 5 sh -c \
  "gpushare-ctl show opp | jq -se '.[0] | .mem_host_resident_bytes == $((256 * MiB)) and
     .mem_device_resident_bytes == $((512 * MiB)) and .mem_evicted_bytes == $((256 * MiB))'"
gpushare-ctl ls | jq -se "map(select(.name == \"opp\"))[0] | .mem_host_resident_bytes == $((256 * MiB))" \
  >/dev/null || fail "ls: $(gpushare-ctl ls)"
gpushare-ctl node | jq -se "map(select(.kind == \"device\"))[0].opportunistic.mem_host_resident_bytes
  == $((256 * MiB))" >/dev/null || fail "node: $(gpushare-ctl node)"
touch "$s/done"
wait "$plain" || fail "the outside process failed: $(cat "$s/plain.out")"
wait "$opp" || fail "the opportunistic job failed: $(cat "$s/opp.out" "$s/opp.err")"
