#!/usr/bin/env bash
# A GPU-bound production job with short host gaps (9-ms kernels, 1 ms of
# host time per step) beside an opportunistic job whose kernels (2 ms) do
# not fit those gaps. The follower forces one launch into a gap with no
# room for it (so that a wrong learned cost cannot lock it out), and such
# launches are paced by the loop's level: unpaced, one went into every gap
# and held production at 0.83 of solo (bench/share's busy scenario); the
# loop cutting its level then did nothing. The bound (production >= 0.95
# of solo) catches the unpaced launches, not a slow machine.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
common=(--mem 16MiB --verify 1MiB)
prod=("${common[@]}" --kernels-per-iter 1 --kernel-us 9000 --host-us 1000)
opp=("${common[@]}" --kernels-per-iter 8 --kernel-us 2000)

start_coordinator
# Rates inside the production job's window, after its first 1000 ms
# (profile and slow start): coord.inc.
harvest_pair 1.5 7 5 1000
pair_check "$prod_with >= 0.95 * $prod_solo" "launches forced into production's short gaps were not paced"
echo "coord-yield-short-gaps: ok"
