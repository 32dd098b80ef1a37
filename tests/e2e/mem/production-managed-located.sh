#!/usr/bin/env bash
# A production job's own managed memory is counted where the driver says
# the program last prefetched it (cuMemRangeGetAttribute,
# CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION): of three 256 MiB
# cuMemAllocManaged allocations, one prefetched to the host shows
# host-resident; one prefetched to the host and back, and one never
# prefetched, device-resident (256 and 512 MiB).
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"
export GPUSHARE_SIM_MEMORY=2GiB GPUSHARE_SIM_CTX_OVERHEAD=0
. "$e2e_dir/mem.inc"

start_coordinator
gpushare-run --sim --production --name located -- "$c" init ctx \
  alloc:managed:256MiB fill:1 prefetch:host stream-sync \
  alloc:managed:256MiB fill:2 prefetch:host prefetch:device stream-sync \
  alloc:managed:256MiB fill:3 ready:"$s/placed" wait:"$s/done" check:3 >"$s/job.out" 2>&1 &
job=$!
wait_for "the job's allocations" 10 test -e "$s/placed"
wait_for "256 MiB host-resident and 512 MiB device-resident in show" 5 sh -c \
  "gpushare-ctl show located | jq -se '.[0] | .mem_host_resident_bytes == $((256 * MiB)) and
     .mem_device_resident_bytes == $((512 * MiB))'"
touch "$s/done"
wait "$job" || fail "the job failed: $(cat "$s/job.out")"
