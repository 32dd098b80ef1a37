#!/usr/bin/env bash
# gpushare-probe device on the simulated GPU: one record per device, found
# through LD_LIBRARY_PATH or --sim alike; memory held by other processes and
# kernel time run by them show up; without any driver it fails clearly.
. "$(dirname "$0")/../common.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
export GPUSHARE_SIM_DEVICES=2 GPUSHARE_SIM_MEMORY=8GiB,4GiB GPUSHARE_SIM_SMS=108,46 GPUSHARE_SIM_CTX_OVERHEAD=256MiB
client="$libexec/tests/gpushare-cuda-client"
wait_file() { for _ in $(seq 600); do [ -e "$1" ] && return 0; sleep 0.05; done; fail "timed out waiting for $1"; }

expect_exit 0 gpushare-probe device --sim
expect_golden sim/probe-device.jsonl "$scratch/out"
LD_LIBRARY_PATH="$libexec/sim" expect_exit 0 gpushare-probe device
expect_golden sim/probe-device.jsonl "$scratch/out"

# Another process's memory on device 1 and 12 ms of kernels on device 0.
LD_LIBRARY_PATH="$libexec/sim" "$client" init ctx timed:3:4000 ctx:1 alloc:plain:1GiB \
  ready:"$scratch/ready" wait:"$scratch/go" >/dev/null &
wait_file "$scratch/ready"
expect_exit 0 gpushare-probe device --sim
touch "$scratch/go"
wait
jq -e -s '.[0].busy_ns == 12000000 and .[0].kernels == 3 and .[0].mem_used_bytes == 268435456
  and .[1].mem_used_bytes == 1342177280 and .[1].kernels == 0' "$scratch/out" >/dev/null ||
  { cat "$scratch/out"; fail "the probe does not see the other process's memory and kernels"; }

# No driver at all: a clear failure (only where this machine has none).
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
  expect_exit 1 gpushare-probe device
  expect_grep '^gpushare-probe: error: cannot load libcuda.so.1: .*--sim' "$scratch/err"
  [ ! -s "$scratch/out" ] || fail "a failed probe printed records"
fi
