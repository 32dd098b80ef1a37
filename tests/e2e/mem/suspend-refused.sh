#!/usr/bin/env bash
# Suspend, bad input: suspending an unknown job, a production job
# holding plain memory it was not started --suspendable for, or a job with a
# CUDA array, its own VMM memory or stream-ordered memory, is refused (exit
# 1, a message naming what cannot move) and changes nothing: the job stays
# running, unpaused, its memory on the device. Another user's job: tests/e2e/mem/suspend-auth.sh.
# (The interposer's path: serve --checkpoint off, since interpose.inc gives
# the coordinator the simulated driver; e2e/mem-suspend-checkpoint tests the
# driver's.)
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"
. "$e2e_dir/mem.inc"
export GPUSHARE_SIM_MEMORY=1GiB GPUSHARE_SIM_EVICT=off GPUSHARE_SIM_CTX_OVERHEAD=0

start_coordinator --checkpoint off
expect_exit 1 gpushare-ctl suspend no-such-job
expect_grep "no-such-job" "$scratch/err"

gpushare-run --sim --name plain -- "$c" init ctx alloc:plain:64MiB fill:1 ready:"$s/plain" \
  wait:"$s/go" check:1 >"$s/plain.out" 2>&1 &
plain=$!
# gs-client holds what it made until its input ends.
mkfifo "$s/in"
gpushare-run --sim --suspendable --name arrays -- "$gs_client" alloc 1048576 array 256 256 \
  vmm 2097152 hold <"$s/in" >"$s/arrays.out" 2>&1 &
arrays=$!
exec 7>"$s/in"
wait_for "the jobs' allocations" 10 sh -c "test -e '$s/plain' && grep -q 'hold ready' '$s/arrays.out'"
# The job publishes what it holds every 100 ms.
wait_for "the plain job's blockers" 5 sh -c "! gpushare-ctl suspend --no-wait plain"

expect_exit 1 gpushare-ctl suspend plain
expect_grep "job [0-9]* 'plain' cannot be suspended: it holds plain device memory not allocated suspendable" \
  "$scratch/err"
show_has plain '.state == "running" and .mem_suspended_bytes == null' ||
  fail "a refused suspend changed the job: $(gpushare-ctl show plain)"

wait_for "the array job's blockers" 5 sh -c \
  "gpushare-ctl suspend --no-wait arrays 2>&1 | grep -q 'VMM API\$'"
expect_exit 1 gpushare-ctl suspend arrays
expect_grep "cannot be suspended: it holds CUDA arrays, memory the program maps itself with the VMM API\$" \
  "$scratch/err"
show_has arrays '.state == "running"' ||
  fail "a refused suspend changed the job: $(gpushare-ctl show arrays)"

# Stream-ordered memory stays in its pool on the device.
gpushare-run --sim --suspendable --name pooled -- "$c" init ctx alloc:async:64MiB \
  ready:"$s/pooled" wait:"$s/go" >"$s/pooled.out" 2>&1 &
pooled=$!
wait_for "the pooled job's allocation" 10 test -e "$s/pooled"
wait_for "the pooled job's blockers" 5 sh -c \
  "gpushare-ctl suspend --no-wait pooled 2>&1 | grep -q 'memory pools)\$'"
expect_exit 1 gpushare-ctl suspend pooled
expect_grep "'pooled' cannot be suspended: it holds stream-ordered memory \(cuMemAllocAsync and memory pools\)\$" \
  "$scratch/err"

# Every job runs on untouched.
touch "$s/go"
exec 7>&-
wait "$plain" || fail "the plain job failed: $(cat "$s/plain.out")"
wait "$arrays" || fail "the array job failed: $(cat "$s/arrays.out")"
wait "$pooled" || fail "the pooled job failed: $(cat "$s/pooled.out")"
