#!/usr/bin/env bash
# Time slices share the device about equally: three processes, released
# together, each queue 1 s of kernels (200 of 5 ms). Round-robin between
# them, all three finish within the last few slices, about 3 s after the
# start; none finishes in a third of the time, as the first would in a FIFO
# queue. The bound (the first to finish takes at least 70% as long as the
# last) leaves room for the processes to start up to about 900 ms apart on
# a loaded machine.
. "$(dirname "$0")/../common.inc"
# Kernel time exactly: no cold run after a switch (it counts as busy time).
export GPUSHARE_SIM_SWITCH_COLD_US=0
use_sim
client="$libexec/tests/gpushare-cuda-client"
wait_file() { for _ in $(seq 1200); do [ -e "$1" ] && return 0; sleep 0.05; done; fail "timed out waiting for $1"; }

for job in a b c; do
  "$client" init ctx kernel:spin ready:"$scratch/$job.ready" wait:"$scratch/go" launch:200:5000 sync \
    >"$scratch/$job.out" &
done
for job in a b c; do wait_file "$scratch/$job.ready"; done
busy_before=$(gpushare-probe device | jq -r .busy_ns)
touch "$scratch/go"
for _ in a b c; do wait -n || fail "a job failed"; done

walls=$(for job in a b c; do jq -r 'select(.step=="sync") | .wall_ms | floor' "$scratch/$job.out"; done | sort -n)
echo "three jobs of 1 s each finished after:" $walls "ms"
first=$(echo "$walls" | head -1)
last=$(echo "$walls" | tail -1)
[ "$last" -ge 2500 ] || fail "3 s of kernels were done after $last ms"
[ $((first * 10)) -ge $((last * 7)) ] ||
  fail "the first job finished after $first ms, the last after $last: not shared equally"
busy=$(($(gpushare-probe device | jq -r .busy_ns) - busy_before))
[ "$busy" = 3000000000 ] || fail "the device ran $busy ns of kernels, not the 3 s queued"
