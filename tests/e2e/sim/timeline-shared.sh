#!/usr/bin/env bash
# One device shared by all processes: their kernels never overlap. 50
# kernels of 2 ms, each followed by a synchronisation, take at least 100 ms
# alone; two processes doing so, released together, need at least 200 ms
# from the release until both are done (the device runs one context at a
# time), and the device's busy time is exactly the sum of both. Load can
# only lengthen times, so these lower bounds do not flake; the upper bound
# only catches a hang.
. "$(dirname "$0")/../common.inc"
# Kernel time exactly: no cold run after a switch (it counts as busy time).
export GPUSHARE_SIM_SWITCH_COLD_US=0
use_sim
client="$libexec/tests/gpushare-cuda-client"
wait_file() { for _ in $(seq 600); do [ -e "$1" ] && return 0; sleep 0.05; done; fail "timed out waiting for $1"; }
wall_ms() { jq -r 'select(.step=="timed") | .wall_ms | floor' "$1"; }
device() { gpushare-probe device | jq -r ".$1"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

expect_exit 0 "$client" init ctx timed:50:2000
solo=$(wall_ms "$scratch/out")
[ "$solo" -ge 100 ] || fail "50 x 2 ms took $solo ms alone, less than the kernels' 100 ms"
busy_before=$(device busy_ns)
kernels_before=$(device kernels)

for job in a b; do
  "$client" init ctx kernel:spin ready:"$scratch/$job.ready" wait:"$scratch/go" timed:50:2000 \
    >"$scratch/$job.out" &
done
wait_file "$scratch/a.ready"
wait_file "$scratch/b.ready"
start=$(now_ms)
touch "$scratch/go"
wait
together=$(($(now_ms) - start))
echo "solo $solo ms; both done $together ms after the release"
[ "$together" -ge 200 ] || fail "both were done after $together ms: their kernels overlapped"
[ "$together" -le 10000 ] || fail "both took $together ms, far over 200"
[ $(($(device busy_ns) - busy_before)) = 200000000 ] || fail "the device was not busy 200 ms"
[ $(($(device kernels) - kernels_before)) = 100 ] || fail "the device did not run 100 kernels"
