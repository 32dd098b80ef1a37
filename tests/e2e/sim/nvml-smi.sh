#!/usr/bin/env bash
# An nvidia-smi-like client (tests/clients/nvml_smi.cc, written from NVML's
# documentation) queries the simulated GPU while two jobs run kernels on it:
# both processes are listed with what they hold, each with its own SM
# utilisation, which add up to the device's; memory is total = used +
# free + reserved in both NVML layouts and used is the processes' sum (and
# under the interposer, a consistent clamped GPU); the constant properties
# are sane and MIG is off.
. "$(dirname "$0")/../common.inc"
# Kernel time exactly: no cold run after a switch (it counts as busy time).
export GPUSHARE_SIM_SWITCH_COLD_US=0
[ -f "$libexec/sim/libnvidia-ml.so.1" ] || skip "the simulated GPU is not installed"
export LD_LIBRARY_PATH="$libexec/sim" GPUSHARE_SIM_MEMORY=8GiB GPUSHARE_SIM_CTX_OVERHEAD=300MiB
# A long window, so that a loaded machine's delays before the query do
# not push the jobs' kernels out of it.
export GPUSHARE_SIM_UTIL_WINDOW_MS=6000
client="$libexec/tests/gpushare-cuda-client"
wait_file() { for _ in $(seq 1200); do [ -e "$1" ] && return 0; sleep 0.05; done; fail "timed out waiting for $1"; }

# Each job: 1 GiB or 2 GiB, then 100 kernels of 6 ms (600 ms busy), then
# holds its context until told to go. The kernels share one timeline.
"$client" init ctx alloc:plain:1GiB timed:100:6000 ready:"$scratch/a.ready" wait:"$scratch/go" \
  >"$scratch/a.out" &
a=$!
"$client" init ctx alloc:plain:2GiB timed:100:6000 ready:"$scratch/b.ready" wait:"$scratch/go" \
  >"$scratch/b.out" &
b=$!
wait_file "$scratch/a.ready"
wait_file "$scratch/b.ready"
expect_exit 0 "$libexec/tests/gpushare-nvml-smi"
cp "$scratch/out" "$scratch/smi.out"
# The same client under the interposer with a 2 GiB limit sees the clamped
# virtual GPU, and the same identity holds in both layouts.
LD_PRELOAD="$libexec/libgpushare-interpose.so" GPUSHARE_MEM_LIMIT=2GiB \
  expect_exit 0 "$libexec/tests/gpushare-nvml-smi"
jq -e '.memory.total_bytes == 2147483648 and .memory_v2.total_bytes == 2147483648
   and .memory.total_bytes == .memory.used_bytes + .memory.free_bytes
   and .memory_v2.total_bytes == .memory_v2.used_bytes + .memory_v2.free_bytes + .memory_v2.reserved_bytes
   and (.processes | length) == 2' "$scratch/out" >/dev/null ||
  { cat "$scratch/out"; fail "the interposer's NVML view is not a consistent 2 GiB GPU"; }
cp "$scratch/smi.out" "$scratch/out"
touch "$scratch/go"
wait "$a" || fail "job a failed"
wait "$b" || fail "job b failed"
jq -c . "$scratch/out" >/dev/null || fail "the client's output is not JSON"
[ "$(wc -l <"$scratch/out")" = 1 ] || fail "expected one device"
device=$(cat "$scratch/out")
check() { echo "$device" | jq -e "$@" >/dev/null || { echo "$device"; fail "not true: ${*: -1}"; }; }

MiB=$((1 << 20))
check --argjson a "$a" --argjson b "$b" --argjson ua $(((1024 + 300) * MiB)) \
  --argjson ub $(((2048 + 300) * MiB)) \
  '(.processes | length) == 2
   and (.processes[] | select(.pid == $a) | .used_bytes) == $ua
   and (.processes[] | select(.pid == $b) | .used_bytes) == $ub'
# 600 ms each of a 6000 ms window: 10 % each (less only if the query came
# more than about 4 s late), 20 % for the device, and the parts add up.
check '.processes | all(.sm_util_pct >= 7 and .sm_util_pct <= 11)'
check '.processes | all((.sm_util_pct - .sm_util_pct_info_v1) | fabs <= 1)'
# The jobs are idle now: nothing since the samples just read (NOT_FOUND).
check '.process_samples_since_status == 6'
check '.gpu_util_pct >= 14 and .gpu_util_pct <= 21'
check '((.processes | map(.sm_util_pct) | add) - .gpu_util_pct) | fabs <= 2'
check '.power_mw > 60000 and .power_mw <= .power_limit_mw'
# Samples every 100 ms over the 6 s window; the jobs kept the device busy
# for over a second, so some 100 ms had it mostly busy.
check '.util_samples == 60 and .util_samples_max_pct >= 50'
# Memory: both layouts agree, and used is what the processes hold.
check '.memory.total_bytes == 8589934592
   and .memory.total_bytes == .memory.used_bytes + .memory.free_bytes
   and .memory_v2.total_bytes == .memory_v2.used_bytes + .memory_v2.free_bytes + .memory_v2.reserved_bytes
   and .memory_v2.total_bytes == .memory.total_bytes
   and .memory.used_bytes == .memory_v2.used_bytes + .memory_v2.reserved_bytes
   and .memory.used_bytes == (.processes | map(.used_bytes) | add)'
check '.mig_mode == 0 and .compute_mode == 0 and .minor == 0'
check '.pci_bus_id == "00000000:10:00.0" and (.uuid | test("^GPU-[0-9a-f]{8}-"))
   and (.serial | test("^[0-9]{13}$")) and .sm_clock_mhz > 0 and .memory_clock_mhz > 0'

# After the jobs leave: no processes, all memory free.
expect_exit 0 "$libexec/tests/gpushare-nvml-smi"
jq -e '(.processes | length) == 0 and .memory.used_bytes == 0' "$scratch/out" >/dev/null ||
  { cat "$scratch/out"; fail "the jobs' processes or memory outlived them"; }
