#!/usr/bin/env bash
# The yield signal on the simulated GPU: a production job (8 ms of kernel,
# 8 ms of host time per iteration) next to a saturating opportunistic job
# under the gpushare loop. Without the yield the loop keeps the
# opportunistic job near its floor (0.03-0.10 of its solo speed); following
# the production job's busy mark it runs in the production job's host gaps
# (0.34-0.45 of solo in bench/share) while production keeps its speed. The
# bounds (production >= 0.9 of solo, opportunistic >= 0.18 of solo) catch a
# yield that does not work (checked by turning it off: 0.10), not a slow
# machine.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
common=(--mem 16MiB --verify 1MiB)
prod=("${common[@]}" --kernels-per-iter 1 --kernel-us 8000 --host-us 8000)
opp=("${common[@]}" --kernels-per-iter 8 --kernel-us 2000)

start_coordinator
# Rates inside the production job's window, after its first 1000 ms (profile
# and slow start): coord.inc.
harvest_pair 1.5 7 5 1000
pair_check "$prod_with >= 0.9 * $prod_solo" "production was not protected"
pair_check "$opp_with >= 0.18 * $opp_solo" "the opportunistic job did not harvest production's gaps"
echo "coord-yield-harvest: ok"
