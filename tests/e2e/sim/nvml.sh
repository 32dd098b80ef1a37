#!/usr/bin/env bash
# NVML agrees with the driver: the same total and free memory as
# cuMemGetInfo, each process listed with what it holds (context included),
# and utilisation equal to the busy share of the last window.
. "$(dirname "$0")/../common.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
# No context-switch cost: two processes time-slicing then keep the device
# busy over the whole window (with the default 151 us per switch it idles
# 7% of a 2-ms slice cycle, which the utilisation would rightly show).
export LD_LIBRARY_PATH="$libexec/sim" GPUSHARE_SIM_MEMORY=8GiB GPUSHARE_SIM_CTX_OVERHEAD=300MiB \
  GPUSHARE_SIM_SWITCH_US=0
client="$libexec/tests/gpushare-cuda-client"
wait_file() { for _ in $(seq 600); do [ -e "$1" ] && return 0; sleep 0.05; done; fail "timed out waiting for $1"; }

"$client" init ctx alloc:plain:1GiB alloc:vmm:512MiB ready:"$scratch/ready" wait:"$scratch/go" \
  >"$scratch/other.out" &
other=$!
wait_file "$scratch/ready"
expect_exit 0 "$client" init ctx alloc:managed:2GiB info nvml
pid_self=$(jq -r 'select(.step=="nvml") | .processes | map(.pid) | .[]' "$scratch/out" | grep -v "^$other$")
info_free=$(jq -r 'select(.step=="info") | .free_bytes' "$scratch/out")
info_total=$(jq -r 'select(.step=="info") | .total_bytes' "$scratch/out")
jq -e --argjson free "$info_free" --argjson total "$info_total" \
  'select(.step=="nvml") | .nvml_free_bytes == $free and .nvml_total_bytes == $total
   and .nvml_used_bytes == $total - $free' "$scratch/out" >/dev/null ||
  fail "NVML and cuMemGetInfo disagree"
MiB=$((1 << 20))
want_other=$(((1024 + 512 + 300) * MiB))
want_self=$(((2048 + 300) * MiB))
jq -e --argjson other "$other" --argjson a "$want_other" --argjson b "$want_self" \
  'select(.step=="nvml") | (.processes | length) == 2
   and (.processes[] | select(.pid == $other) | .used_bytes) == $a
   and (.processes[] | select(.pid != $other) | .used_bytes) == $b' "$scratch/out" >/dev/null ||
  { cat "$scratch/out"; fail "NVML's process list is wrong"; }
[ -n "$pid_self" ] || fail "NVML does not list the querying process"
touch "$scratch/go"
wait

# Utilisation over the window, while the device is known to be busy: job a
# queues a 3 s kernel; the querying client then runs a 1.2 s kernel, which
# shares the device with a's (time slices) and so is done after about 2.4 s,
# inside a's; a query right after it sees a device busy over the whole
# window (1 s, or 200 ms when so set) and each process busy about half of
# it. (Only a stall of over half a second before the query moves the window
# past a's kernel.)
"$client" init ctx kernel:spin launch:1:3000000 ready:"$scratch/busy" wait:"$scratch/done" \
  >"$scratch/a.out" &
busy_job=$!
expect_exit 0 "$client" init ctx kernel:spin wait:"$scratch/busy" timed:1:1200000 nvml
util=$(jq -r 'select(.step=="nvml") | .gpu_util_pct' "$scratch/out")
[ "$util" -ge 95 ] || fail "utilisation $util % over a second the device was busy"
GPUSHARE_SIM_UTIL_WINDOW_MS=200 expect_exit 0 "$client" init ctx nvml
util=$(jq -r 'select(.step=="nvml") | .gpu_util_pct' "$scratch/out")
[ "$util" -ge 95 ] || fail "utilisation $util % over 200 ms inside a's kernel"
touch "$scratch/done"
wait "$busy_job" || fail "the busy job failed"
# Per process: the device's time went half to each while both had work (the
# bounds allow a 600 ms stall before the query, when a ran alone).
"$client" init ctx kernel:spin launch:1:3000000 ready:"$scratch/busy2" wait:"$scratch/done2" \
  >"$scratch/a.out" &
busy_job=$!
"$client" init ctx kernel:spin wait:"$scratch/busy2" timed:1:800000 ready:"$scratch/ran" \
  wait:"$scratch/done2" >"$scratch/b.out" &
other_job=$!
wait_file "$scratch/ran"
GPUSHARE_SIM_UTIL_WINDOW_MS=1000 expect_exit 0 "$libexec/tests/gpushare-nvml-smi"
touch "$scratch/done2"
wait "$busy_job" && wait "$other_job" || fail "a job failed"
jq -e '(.processes | length) == 2 and (.processes | all(.sm_util_pct >= 20 and .sm_util_pct <= 80))
  and .gpu_util_pct >= 95' "$scratch/out" >/dev/null ||
  { cat "$scratch/out"; fail "NVML's per-process utilisation is not about half each"; }
