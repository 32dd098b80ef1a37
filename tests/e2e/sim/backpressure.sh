#!/usr/bin/env bash
# Launches block when the queue is full, as a real launch does when the push
# buffer is: with GPUSHARE_SIM_MAX_PENDING=4, launching ten 50 ms kernels
# returns only once six have finished (300 ms), with four still queued; and
# the device holds at most 512 unfinished kernels of a process (2048 of
# all), so 1012 kernels of 1 ms return only once 500 have finished.
# (Lower bounds on time: load only lengthens them.)
. "$(dirname "$0")/../common.inc"
use_sim
client="$libexec/tests/gpushare-cuda-client"
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# init first, timed apart from the launches by a ready file.
run_timed() {
  rm -f "$scratch/initialised"
  "$client" init ctx kernel:spin ready:"$scratch/initialised" "$@" ?query sync >"$scratch/out" &
  local pid=$!
  for _ in $(seq 600); do [ -e "$scratch/initialised" ] && break; sleep 0.01; done
  local start
  start=$(now_ms)
  wait "$pid" || fail "the client failed: $(cat "$scratch/out")"
  echo $(($(now_ms) - start))
}
queried() { jq -r 'select(.step=="query") | .result' "$scratch/out"; }
synced() { jq -r 'select(.step=="sync") | .wall_ms | floor' "$scratch/out"; }

ms=$(GPUSHARE_SIM_MAX_PENDING=4 run_timed launch:10:50000)
[ "$(queried)" = CUDA_ERROR_NOT_READY ] || fail "four 50 ms kernels were not still queued"
launch_ms=$((ms - $(synced)))
echo "10 launches with 4 pending at most: $launch_ms ms, then $(synced) ms to synchronise"
[ "$launch_ms" -ge 250 ] || fail "ten 50 ms launches with 4 pending at most returned after $launch_ms ms"
[ "$(synced)" -ge 150 ] || fail "the last four 50 ms kernels were done after $(synced) ms"

ms=$(GPUSHARE_SIM_MAX_PENDING=4096 run_timed launch:1012:1000)
launch_ms=$((ms - $(synced)))
echo "1012 launches of 1 ms: $launch_ms ms, then $(synced) ms to synchronise"
[ "$launch_ms" -ge 450 ] || fail "1012 launches, 512 at most queued, returned after $launch_ms ms"
[ "$(synced)" -ge 450 ] || fail "512 queued kernels of 1 ms were done after $(synced) ms"
