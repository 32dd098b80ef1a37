#!/usr/bin/env bash
# The yield on a real framework step: a production ResNet-50 batch-32 step
# timeline (825 kernels of a few microseconds, 25 ms of host time per step)
# next to an opportunistic batch-128 one back to back, under the gpushare
# loop. With one launch in flight and a wake-up per launch the
# opportunistic job got 0.06-0.09 of its solo speed here (bench/share,
# results.md); with GPU-time grants (bursts sized to production's gap, a
# small grant beside it while it is busy) about 0.5, production at 0.98.
# The bounds (production >= 0.9 of solo, opportunistic >= 0.3 of solo,
# rates counted inside the production job's window) catch the serialised
# launch path (0.06; bursts of one launch in flight: 0.21), not a slow
# machine (0.46-0.53 on the loaded 2-core machine).
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
traces="$libexec/bench/traces"
common=(--mem 16MiB --verify 1MiB --launch-scale 0.4)
prod=("${common[@]}" --trace "$traces/resnet50-32.csv" --host-us 25000)
opp=("${common[@]}" --trace "$traces/resnet50-128.csv")

start_coordinator
# Rates inside the production job's window, after its first 1500 ms (profile
# and slow start): coord.inc.
harvest_pair 2 9 6 1500
pair_check "$prod_with >= 0.9 * $prod_solo" "production was not protected"
pair_check "$opp_with >= 0.3 * $opp_solo" "the opportunistic job's short kernels were serialised"
echo "coord-yield-trace: ok"
