#!/usr/bin/env bash
# The simulator's documented settings do what gpushare-workload(1) says:
# GPUSHARE_SIM_DRIVER_VERSION is what cuDriverGetVersion reports and the
# newest version cuGetProcAddress accepts; GPUSHARE_SIM_KERNEL_US is how long
# a kernel runs whose module gives no duration (PTX other than gpushare_spin);
# GPUSHARE_SIM_MAX_PENDING is how many unfinished kernels a stream holds
# before a launch waits. And the workload exits 1 on a checksum mismatch.
. "$(dirname "$0")/../common.inc"
use_sim
client="$libexec/tests/gpushare-cuda-client"
step() { jq -r "select(.step==\"$1\") | .$2" "$scratch/out"; }

# Driver version: reported, and the bound of cuGetProcAddress.
expect_exit 0 "$client" init version resolve:cuMemAlloc:12000
[ "$(step version driver_version)" = 13000 ] || fail "default version: $(cat "$scratch/out")"
GPUSHARE_SIM_DRIVER_VERSION=11080 expect_exit 0 "$client" init version resolve:cuMemAlloc:11080 \
  ?resolve:cuMemAlloc:12000
[ "$(step version driver_version)" = 11080 ] || fail "version 11080: $(cat "$scratch/out")"
[ "$(step resolve result | tr '\n' ' ')" = "CUDA_SUCCESS CUDA_ERROR_INVALID_VALUE " ] ||
  fail "cuGetProcAddress above the driver's version: $(cat "$scratch/out")"
GPUSHARE_SIM_DRIVER_VERSION=new expect_exit 1 "$client" init
expect_grep "GPUSHARE_SIM_DRIVER_VERSION.*new" "$scratch/err"

# Kernel duration of a module that gives none. Events after a lead kernel
# measure the simulated timeline, not the host's delays: exact.
events_ms() { jq -r 'select(.step=="events") | .elapsed_ms' "$scratch/out"; }
GPUSHARE_SIM_KERNEL_US=40000 expect_exit 0 "$client" init ctx kernel:ptx:plain_kernel events:1:1
awk -v ms="$(events_ms)" 'BEGIN { exit !(ms > 39.9 && ms < 40.1) }' ||
  fail "GPUSHARE_SIM_KERNEL_US=40000: a PTX kernel took $(events_ms) ms"
expect_exit 0 "$client" init ctx kernel:ptx:plain_kernel events:1:1
awk -v ms="$(events_ms)" 'BEGIN { exit !(ms > 0.9 && ms < 1.1) }' ||
  fail "default: a PTX kernel took $(events_ms) ms, not 1"
# gpushare_spin keeps the duration its parameter gives.
GPUSHARE_SIM_KERNEL_US=40000 expect_exit 0 "$client" init ctx kernel:spin events:3000:1000
awk -v ms="$(events_ms)" 'BEGIN { exit !(ms > 2.9 && ms < 3.1) }' ||
  fail "gpushare_spin under GPUSHARE_SIM_KERNEL_US took $(events_ms) ms, not 3"

# A full stream: with 2 pending kernels at most, the launch of the 10th of
# 100 ms kernels returns only once 8 have finished (800 ms of simulated
# time, which a loaded host cannot shorten); with the default of 1024 the
# same launches return before the first kernel ends.
launch_ms() { jq -r 'select(.step=="launch") | .wall_ms' "$scratch/out"; }
GPUSHARE_SIM_MAX_PENDING=2 expect_exit 0 "$client" init ctx launch:10:100000 sync
held=$(launch_ms)
awk -v ms="$held" 'BEGIN { exit !(ms >= 790) }' ||
  fail "GPUSHARE_SIM_MAX_PENDING=2: 10 launches of 100 ms kernels returned after ${held} ms"
expect_exit 0 "$client" init ctx launch:10:100000 sync
free=$(launch_ms)
awk -v ms="$free" 'BEGIN { exit !(ms < 500) }' ||
  fail "default: 10 launches waited ${free} ms, as if the stream were full"
GPUSHARE_SIM_MAX_PENDING=0 expect_exit 1 "$client" init
expect_grep "GPUSHARE_SIM_MAX_PENDING" "$scratch/err"

# The workload verifies its data: a copy that comes back changed is a
# checksum mismatch, status 1, with the offset; unchanged, status 0.
workload=("$libexec/gpushare-workload" --mem 8MiB --iterations 2 --kernel-us 10)
expect_exit 0 "${workload[@]}"
LD_PRELOAD="$libexec/tests/libgpushare-test-corrupt-copy.so" expect_exit 1 "${workload[@]}"
expect_grep "^gpushare-workload: error: checksum mismatch: the working set changed at offset 0$" \
  "$scratch/err"
[ ! -s "$scratch/out" ] || fail "a workload whose data did not verify printed a summary"
echo "sim-settings: ok (MAX_PENDING=2: ${held} ms; default: ${free} ms)"
