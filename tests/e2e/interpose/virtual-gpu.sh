#!/usr/bin/env bash
# A consistent virtual GPU: cuMemGetInfo, cuDeviceTotalMem and NVML (through
# our dlsym) all report total = min(limit, physical), used = what the job
# holds, free = total - used, never negative, never above physical.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
gib=$((1024 * 1024 * 1024))

client GPUSHARE_MEM_LIMIT=2GiB -- "$gs_client" meminfo totalmem nvml alloc 512MiB meminfo nvml
[ "$(value total meminfo)" = $((2 * gib)) ] || fail "cuMemGetInfo total is not the limit"
[ "$(value free meminfo)" = $((2 * gib)) ] || fail "cuMemGetInfo free is not the whole limit"
[ "$(value total totalmem)" = $((2 * gib)) ] || fail "cuDeviceTotalMem is not the limit"
[ "$(value total nvml)" = $((2 * gib)) ] || fail "NVML total is not the limit"
[ "$(value v2_total nvml)" = $((2 * gib)) ] || fail "NVML v2 total is not the limit"
after=$(grep '^meminfo' "$scratch/out" | sed -n 2p)
[ "$after" = "meminfo result=0 free=$((2 * gib - 512 * 1024 * 1024)) total=$((2 * gib))" ] ||
  fail "after 512 MiB: '$after'"
nvml_after=$(grep '^nvml' "$scratch/out" | sed -n 2p)
echo "$nvml_after" | grep -q "used=$((512 * 1024 * 1024)) " || fail "NVML used is not what the job holds: $nvml_after"
echo "$nvml_after" | grep -q "free=$((2 * gib - 512 * 1024 * 1024)) " || fail "NVML free disagrees: $nvml_after"

# A limit above the device is clamped to the device.
client GPUSHARE_MEM_LIMIT=64GiB -- "$gs_client" meminfo totalmem nvml
[ "$(value total meminfo)" = $((8 * gib)) ] || fail "total above physical"
[ "$(value total totalmem)" = $((8 * gib)) ] || fail "cuDeviceTotalMem above physical"
[ "$(value total nvml)" = $((8 * gib)) ] || fail "NVML total above physical"

# Free is never more than is physically free: another process holds 7 GiB.
hold_memory "$scratch/holder.out" "$gs_client" alloc 7GiB hold
client GPUSHARE_MEM_LIMIT=4GiB -- "$gs_client" meminfo nvml
free=$(value free meminfo)
[ "$free" -le $((1 * gib)) ] || fail "free ($free) above what is physically free"
[ "$(value free nvml)" -le $((1 * gib)) ] || fail "NVML free above what is physically free"
release_memory

# A percentage is of each device.
client GPUSHARE_MEM_LIMIT=25% -- "$gs_client" meminfo
[ "$(value total meminfo)" = $((2 * gib)) ] || fail "25% of 8 GiB is not 2 GiB"
