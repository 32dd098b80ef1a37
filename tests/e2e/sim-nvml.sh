#!/usr/bin/env bash
# NVML agrees with the driver: the same total and free memory as
# cuMemGetInfo, each process listed with what it holds (context included),
# and utilisation equal to the busy share of the last window.
. "$(dirname "$0")/common.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
export LD_LIBRARY_PATH="$libexec/sim" GPUSHARE_SIM_MEMORY=8GiB GPUSHARE_SIM_CTX_OVERHEAD=300MiB
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

# 300 ms of kernels within the last second: 30 % busy.
expect_exit 0 "$client" init ctx timed:30:10000 nvml
util=$(jq -r 'select(.step=="nvml") | .gpu_util_pct' "$scratch/out")
[ "$util" -ge 25 ] && [ "$util" -le 31 ] || fail "utilisation $util %, expected about 30"
GPUSHARE_SIM_UTIL_WINDOW_MS=200 expect_exit 0 "$client" init ctx timed:30:10000 nvml
[ "$(jq -r 'select(.step=="nvml") | .gpu_util_pct' "$scratch/out")" -ge 60 ] ||
  fail "a 200 ms window right after 300 ms of kernels is not busy"
