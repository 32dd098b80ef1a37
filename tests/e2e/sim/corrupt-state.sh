#!/usr/bin/env bash
# A state file that is not ours, truncated, or of another layout version,
# and bad settings: clear errors naming the file or the variable, the
# documented CUDA errors, and no crash, from the driver, NVML, the probe
# and the workload alike.
. "$(dirname "$0")/../common.inc"
use_sim
client="$libexec/tests/gpushare-cuda-client"
workload="$libexec/gpushare-workload"
state=$GPUSHARE_SIM_STATE

echo "this is not a simulated GPU" >"$state"
expect_exit 1 "$client" init
expect_grep '"step":"init","result":"CUDA_ERROR_OPERATING_SYSTEM"' "$scratch/out"
expect_grep "^gpushare-sim\[[0-9]+\]: error: $state is not a gpushare simulated GPU state file" "$scratch/err"
expect_exit 1 "$client" nvml
expect_grep "gpushare-sim-nvml\[[0-9]+\]: error: $state is not a gpushare simulated GPU state file" "$scratch/err"
expect_exit 1 "$workload" --iterations 1
expect_grep '^gpushare-workload: error: cuInit: CUDA_ERROR_OPERATING_SYSTEM$' "$scratch/err"
expect_exit 1 gpushare-probe device
expect_grep "^gpushare-probe: error: cuInit: CUDA_ERROR_OPERATING_SYSTEM \($state is not a gpushare" "$scratch/err"
[ "$(cat "$state")" = "this is not a simulated GPU" ] || fail "the foreign file was modified"

# A real state file, cut short.
rm -f "$state"
expect_exit 0 "$client" init
truncate -s 100000 "$state"
expect_exit 1 "$client" init
expect_grep "$state is truncated or corrupt \(100000 bytes, expected [0-9]+\); remove it" "$scratch/err"

# Another layout version (the field after the 16-byte magic).
rm -f "$state"
expect_exit 0 "$client" init
printf '\x63\x00\x00\x00' | dd of="$state" bs=1 seek=16 conv=notrunc status=none
expect_exit 1 "$client" init
# (the version this simulator reads changes with the layout: lib/simgpu/state.h)
expect_grep "$state has state layout version 99, but this simulator reads version [0-9]+;" "$scratch/err"

# Inconsistent contents behind a valid header: refused, not trusted.
rm -f "$state"
expect_exit 0 "$client" init
printf '\x63\x00\x00\x00' | dd of="$state" bs=1 seek=24 conv=notrunc status=none  # device count
expect_exit 1 "$client" init
expect_grep "$state: corrupt state \(device count out of range\); remove it" "$scratch/err"

# Not a file at all.
rm -f "$state"
mkdir "$state"
expect_exit 1 "$client" init
expect_grep "cannot open the simulated GPU state file $state" "$scratch/err"
rmdir "$state"

# Bad settings name the variable; the driver reports no device.
GPUSHARE_SIM_MEMORY=12XB expect_exit 1 "$client" init
expect_grep '"result":"CUDA_ERROR_NO_DEVICE"' "$scratch/out"
expect_grep "error: GPUSHARE_SIM_MEMORY: '12XB' has an unknown unit" "$scratch/err"
GPUSHARE_SIM_DEVICES=9 expect_exit 1 "$workload"
expect_grep "GPUSHARE_SIM_DEVICES: '9' is out of range \(1 to 8\)" "$scratch/err"
