#!/usr/bin/env bash
# The managed-memory cost model charges fault service to what a real GPU
# shares (lib/simgpu/driver/launch.cc): a kernel of a context whose managed
# memory is on the host holds the device for its fault service (its time
# slice does not end inside it) and takes that long of the host link. With
# GPUSHARE_SIM_MANAGED_SLOWDOWN=100, a 2 ms kernel with all its context's
# managed memory on the host runs 202 ms, 200 of them held. Another
# process's short kernels then each wait for a hold: 5 synchronised kernels
# of 1 ms take at least 4 holds (800 ms; the test asks for 600, a bound
# load can only lengthen), where next to the same job with its memory on
# the device they take milliseconds (the test asks for under 400 ms, many
# times the expected figure). A 4 MiB copy to the device by a third
# process waits behind the faults' link time reserved before it (at least
# 50 ms; 0.1 ms on an idle link).
. "$(dirname "$0")/../common.inc"
use_sim GPUSHARE_SIM_MEMORY=1GiB GPUSHARE_SIM_CTX_OVERHEAD=0
export GPUSHARE_SIM_MANAGED_SLOWDOWN=100
client="$libexec/tests/gpushare-cuda-client"

# run PLACE KERNELS: the faulting job queues KERNELS kernels of 2 ms with
# its 64 MiB of managed memory at PLACE; then the short job and the copier
# run; the faulting job is stopped (its queue may be long). Prints the
# short job's and the copy's wall times.
run() {
  local dir="$scratch/$1"
  mkdir -p "$dir"
  export GPUSHARE_SIM_STATE="$dir/state"
  "$client" init ctx alloc:managed:64MiB prefetch:"$1" stream-sync kernel:spin \
    launch:"$2":2000 ready:"$dir/queued" sync >"$dir/long.out" 2>"$dir/long.err" &
  local long=$!
  "$client" init ctx kernel:spin wait:"$dir/queued" timed:5:1000 >"$dir/short.out" ||
    fail "$1: the short job failed"
  "$client" init ctx alloc:plain:4MiB memset:1 wait:"$dir/queued" copy:htod:4MiB:sync \
    >"$dir/copy.out" || fail "$1: the copier failed"
  kill "$long" 2>/dev/null || true
  wait "$long" 2>/dev/null || true
  echo "$(jq -r 'select(.step=="timed") | .wall_ms | floor' "$dir/short.out")" \
    "$(jq -r 'select(.step=="copy") | .wall_ms' "$dir/copy.out")"
}

read -r held copy_held < <(run host 10)
read -r free copy_free < <(run device 1000)
echo "5 short kernels: $held ms beside faulting kernels, $free ms beside resident ones;" \
  "a 4 MiB copy: $copy_held ms, $copy_free ms"
[ "$held" -ge 600 ] || fail "beside faulting kernels, 5 short kernels took only $held ms: no hold"
[ "$free" -lt 400 ] || fail "beside resident kernels, 5 short kernels took $free ms"
awk -v ms="$copy_held" 'BEGIN { exit !(ms >= 50) }' ||
  fail "a copy beside faulting kernels took $copy_held ms: the faults took no link time"
