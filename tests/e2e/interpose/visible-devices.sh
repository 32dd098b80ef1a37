#!/usr/bin/env bash
# Limits apply per device, identified by UUID: with two simulated devices
# (8 GiB and 4 GiB), CUDA_VISIBLE_DEVICES naming the second by index or by
# UUID gives the job that device, its percentage limit is of that device's
# memory, and NVML's view of the device the job does not see is untouched.
. "$(dirname "$0")/../common.inc"
export GPUSHARE_SIM_DEVICES=2 GPUSHARE_SIM_MEMORY=8GiB,4GiB
. "$e2e_dir/interpose.inc"
gib=$((1024 * 1024 * 1024))

gpushare-probe device --sim >"$scratch/devices"
first=$(jq -r 'select(.index == 0) | .uuid' "$scratch/devices")
second=$(jq -r 'select(.index == 1) | .uuid' "$scratch/devices")
[ -n "$second" ] && [ "$first" != "$second" ] || fail "two devices with distinct UUIDs expected"

# No CUDA_VISIBLE_DEVICES: the job's device 0 is the 8 GiB one.
client GPUSHARE_MEM_LIMIT=50% GPUSHARE_LOG=debug -- "$gs_client" meminfo
[ "$(value total meminfo)" = $((4 * gib)) ] || fail "50% of the first device is not 4 GiB"
expect_grep "device 0 $first: 8589934592 bytes, limit 4294967296 bytes" "$scratch/err"

for visible in 1 "$second" "${second:0:12}"; do
  client CUDA_VISIBLE_DEVICES="$visible" GPUSHARE_MEM_LIMIT=50% GPUSHARE_LOG=debug -- \
    "$gs_client" meminfo totalmem alloc 1536MiB alloc 1GiB nvml
  expect_grep "device 0 $second: 4294967296 bytes, limit 2147483648 bytes" "$scratch/err"
  [ "$(value total meminfo)" = $((2 * gib)) ] || fail "CUDA_VISIBLE_DEVICES=$visible: total is not 50% of 4 GiB"
  [ "$(value total totalmem)" = $((2 * gib)) ] || fail "CUDA_VISIBLE_DEVICES=$visible: cuDeviceTotalMem"
  [ "$(grep '^alloc' "$scratch/out" | sed 's/.*result=//' | tr '\n' ' ')" = "0 2 " ] ||
    fail "CUDA_VISIBLE_DEVICES=$visible: the limit of the second device did not hold"
  # NVML enumerates every device; index 0 is the first, which this job does not use.
  [ "$(value total nvml)" = $((8 * gib)) ] || fail "NVML's view of an unused device was changed"
done
