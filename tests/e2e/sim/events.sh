#!/usr/bin/env bash
# Events measure simulated time, the device's view: a 50 ms kernel measures
# 50 ms; sharing the device with another process's 400 ms of queued
# kernels a 10 ms kernel measures the other's slices too (under fifo, the
# whole wait); queries say CUDA_ERROR_NOT_READY until the work is
# done, and a synchronisation waits for it.
. "$(dirname "$0")/../common.inc"
use_sim
client="$libexec/tests/gpushare-cuda-client"
wait_file() { for _ in $(seq 600); do [ -e "$1" ] && return 0; sleep 0.05; done; fail "timed out waiting for $1"; }
elapsed() { jq -r 'select(.step=="events") | .elapsed_ms' "$scratch/out"; }

# within MS LOW HIGH: LOW <= MS < HIGH.
within() { awk -v ms="$1" -v low="$2" -v high="$3" 'BEGIN { exit !(ms >= low && ms < high) }'; }

# Behind a 200 ms lead kernel, the events and the kernel are queued ahead of
# the host: they measure the kernel's time exactly, unless the host stalls
# for 200 ms.
expect_exit 0 "$client" init ctx events:50000:200000 stream events:20000:200000
[ "$(elapsed | tr '\n' ' ')" = "50 20 " ] ||
  fail "50 and 20 ms kernels measured $(elapsed | tr '\n' ' ')ms"

# busy NAME COUNT US: another process queues COUNT kernels of US and holds on.
busy() {
  "$client" init ctx launch:"$2":"$3" ready:"$scratch/busy.$1" wait:"$scratch/done.$1" >/dev/null &
  wait_file "$scratch/busy.$1"
}
# Time-sliced, this process's 10 ms kernel alternates with the other's 1 s
# queue in 2 ms slices: it ends after about 20 ms, its own 10 and as much of
# the other's (a 100 ms lead kernel, sliced likewise, keeps the host's
# delays out of the measurement).
busy sliced 40 25000
expect_exit 0 "$client" init ctx events:10000:100000
touch "$scratch/done.sliced"
wait
echo "time-sliced: $(elapsed) ms"
within "$(elapsed)" 15 60 ||
  fail "time-sliced with another process's queue, a 10 ms kernel measured $(elapsed) ms"
# Under fifo it waits for what is left of the 400 ms when this process got
# going, plus its own 10.
export GPUSHARE_SIM_STATE="$scratch/fifo-state" GPUSHARE_SIM_SCHED=fifo
busy fifo 40 10000
expect_exit 0 "$client" init ctx events:10000
touch "$scratch/done.fifo"
wait
within "$(elapsed)" 100 411 ||
  fail "under fifo, behind 400 ms of another process's kernels, a 10 ms kernel measured $(elapsed) ms"
unset GPUSHARE_SIM_SCHED
export GPUSHARE_SIM_STATE="$scratch/sim-state"

# Not ready while pending, ready after a synchronisation that waited.
expect_exit 0 "$client" init ctx stream launch:1:300000 ?query stream-sync query
[ "$(jq -r 'select(.step=="query") | .result' "$scratch/out" | tr '\n' ' ')" = \
  "CUDA_ERROR_NOT_READY CUDA_SUCCESS " ] || fail "cuStreamQuery did not follow the kernel"
awk -v ms="$(jq -r 'select(.step=="stream-sync") | .wall_ms' "$scratch/out")" 'BEGIN { exit !(ms >= 250) }' ||
  fail "cuStreamSynchronize returned before the 300 ms kernel ended"
