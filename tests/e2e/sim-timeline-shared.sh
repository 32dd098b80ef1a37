#!/usr/bin/env bash
# One kernel timeline per device, shared by all processes: 50 kernels of
# 2 ms, each followed by a synchronisation, take 100 ms alone; two processes
# doing so at once take about twice as long each, and the device's busy
# time is the sum of both. (Times here can only grow on a loaded machine,
# so the bounds that matter are lower bounds.)
. "$(dirname "$0")/common.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
export LD_LIBRARY_PATH="$libexec/sim"
client="$libexec/tests/gpushare-cuda-client"
wait_file() { for _ in $(seq 600); do [ -e "$1" ] && return 0; sleep 0.05; done; fail "timed out waiting for $1"; }
wall_ms() { jq -r 'select(.step=="timed") | .wall_ms | floor' "$1"; }
device() { gpushare-probe device | jq -r ".$1"; }

expect_exit 0 "$client" init ctx timed:50:2000
solo=$(wall_ms "$scratch/out")
[ "$solo" -ge 100 ] || fail "50 x 2 ms took $solo ms alone, less than the kernels' 100 ms"
busy_before=$(device busy_ns)
kernels_before=$(device kernels)

for job in a b; do
  "$client" init ctx ready:"$scratch/$job.ready" wait:"$scratch/go" timed:50:2000 >"$scratch/$job.out" &
done
wait_file "$scratch/a.ready"
wait_file "$scratch/b.ready"
touch "$scratch/go"
wait

a=$(wall_ms "$scratch/a.out")
b=$(wall_ms "$scratch/b.out")
echo "solo $solo ms, together $a ms and $b ms"
# Serialised, each waits for the other's kernels: both well above 100 ms.
[ "$a" -ge 170 ] && [ "$b" -ge 170 ] || fail "together they took $a and $b ms: the kernels overlapped"
[ "$a" -gt "$solo" ] && [ "$b" -gt "$solo" ] || fail "together no slower than alone ($solo ms)"
[ "$a" -le 1000 ] && [ "$b" -le 1000 ] || fail "together they took $a and $b ms, far over 200"
[ $(($(device busy_ns) - busy_before)) = 200000000 ] || fail "the device was not busy 200 ms"
[ $(($(device kernels) - kernels_before)) = 100 ] || fail "the device did not run 100 kernels"
