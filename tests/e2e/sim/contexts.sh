#!/usr/bin/env bash
# Contexts and misuse: each active context costs GPUSHARE_SIM_CTX_OVERHEAD;
# destroying one frees what it allocated; releasing the primary context
# frees it too. Misuse gets the driver's error codes: a double free is
# CUDA_ERROR_INVALID_VALUE, no current context CUDA_ERROR_INVALID_CONTEXT,
# a destroyed context too; calls before cuInit CUDA_ERROR_NOT_INITIALIZED.
. "$(dirname "$0")/../common.inc"
use_sim GPUSHARE_SIM_MEMORY=4GiB GPUSHARE_SIM_CTX_OVERHEAD=300MiB
client="$libexec/tests/gpushare-cuda-client"
MiB=$((1 << 20))
free_list() { jq -r 'select(.step=="info") | .free_bytes / 1048576' "$scratch/out" | tr '\n' ' '; }

expect_exit 0 "$client" init ctx info ctx-create info alloc:plain:1GiB info ctx-destroy info
# primary 300 MiB; a created context 300 more; 1 GiB in it; destroyed with it.
[ "$(free_list)" = "3796 3496 2472 3796 " ] || fail "context charges: $(free_list)MiB free"
expect_exit 0 "$client" init ctx alloc:plain:1GiB info ctx-release ctx info
# Releasing the primary context's last reference frees it and its memory.
[ "$(free_list)" = "2772 3796 " ] || fail "primary context release: $(free_list)MiB free"

expect_exit 0 "$client" init ctx alloc:plain:1MiB free ?refree ?alloc:plain:0 ctx-unset ?alloc:plain:1MiB \
  ?info
[ "$(jq -r 'select(.step=="refree" or .step=="alloc") | .result' "$scratch/out" | tr '\n' ' ')" = \
  "CUDA_SUCCESS CUDA_ERROR_INVALID_VALUE CUDA_ERROR_INVALID_VALUE CUDA_ERROR_INVALID_CONTEXT " ] ||
  { cat "$scratch/out"; fail "misuse did not get the driver's errors"; }
expect_grep '"step":"info","result":"CUDA_ERROR_INVALID_CONTEXT"' "$scratch/out"

expect_exit 0 "$client" init ctx-create ctx-destroy ?alloc:plain:1MiB
expect_grep '"step":"alloc","result":"CUDA_ERROR_INVALID_CONTEXT"' "$scratch/out"
expect_exit 1 "$client" ctx
expect_grep '"step":"ctx","result":"CUDA_ERROR_NOT_INITIALIZED"' "$scratch/out"

# Several devices, each with its own memory.
GPUSHARE_SIM_DEVICES=2 GPUSHARE_SIM_MEMORY=4GiB,2GiB expect_exit 0 "$client" init devices total:0 total:1 \
  ctx:1 alloc:plain:1GiB info ?total:2
[ "$(jq -r 'select(.step=="total") | .total_bytes' "$scratch/out" | head -2 | tr '\n' ' ')" = \
  "$((4 << 30)) $((2 << 30)) " ] || fail "per-device memory sizes are wrong"
[ "$(free_list)" = "724 " ] || fail "device 1: $(free_list)MiB free, want 724"
expect_grep '"step":"total","result":"CUDA_ERROR_INVALID_DEVICE"' "$scratch/out"

# CUDA_VISIBLE_DEVICES (what gpushare-run --gpu sets) picks the devices: the
# one visible as ordinal 0 here is device 1, with its 2 GiB and its charges.
GPUSHARE_SIM_DEVICES=2 GPUSHARE_SIM_MEMORY=4GiB,2GiB CUDA_VISIBLE_DEVICES=1 \
  expect_exit 0 "$client" init devices total:0 ctx alloc:plain:1GiB info nvml
[ "$(jq -r 'select(.step=="devices") | .devices' "$scratch/out")" = 1 ] || fail "more than one device visible"
[ "$(jq -r 'select(.step=="total") | .total_bytes' "$scratch/out")" = $((2 << 30)) ] ||
  fail "ordinal 0 is not device 1"
[ "$(free_list)" = "724 " ] || fail "CUDA_VISIBLE_DEVICES=1: $(free_list)MiB free, want 724"
GPUSHARE_SIM_DEVICES=2 CUDA_VISIBLE_DEVICES=7 expect_exit 1 "$client" init
expect_grep '"result":"CUDA_ERROR_NO_DEVICE"' "$scratch/out"
expect_grep "CUDA_VISIBLE_DEVICES='7' shows none of the 2 simulated devices" "$scratch/err"
