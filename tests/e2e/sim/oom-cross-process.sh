#!/usr/bin/env bash
# One device, shared: on an 8 GiB simulated GPU, 6 GiB held by one process
# makes another's 4 GiB allocation fail with CUDA_ERROR_OUT_OF_MEMORY, and
# succeed once the first has exited. Both see the same free memory.
. "$(dirname "$0")/../common.inc"
use_sim GPUSHARE_SIM_MEMORY=8GiB GPUSHARE_SIM_CTX_OVERHEAD=0
client="$libexec/tests/gpushare-cuda-client"
wait_file() { for _ in $(seq 600); do [ -e "$1" ] && return 0; sleep 0.05; done; fail "timed out waiting for $1"; }

"$client" init ctx alloc:plain:6GiB ready:"$scratch/a.ready" wait:"$scratch/a.go" >"$scratch/a.out" &
holder=$!
wait_file "$scratch/a.ready"

expect_exit 1 "$client" init ctx info alloc:plain:4GiB
[ "$(jq -r 'select(.step=="info") | .free_bytes' "$scratch/out")" = $((2 << 30)) ] ||
  fail "the second process does not see the first one's 6 GiB"
expect_grep '"step":"alloc","result":"CUDA_ERROR_OUT_OF_MEMORY","kind":"plain","bytes":4294967296' "$scratch/out"
expect_exit 0 "$client" init ctx alloc:plain:2GiB ?alloc:plain:1
expect_grep '"step":"alloc","result":"CUDA_ERROR_OUT_OF_MEMORY","kind":"plain","bytes":1,' "$scratch/out"

touch "$scratch/a.go"
wait "$holder" || fail "the holder failed: $(cat "$scratch/a.out")"
expect_exit 0 "$client" init ctx alloc:plain:4GiB info
[ "$(jq -r 'select(.step=="info") | .free_bytes' "$scratch/out")" = $((4 << 30)) ] ||
  fail "the first process's memory was not given back at exit"
# More than the device can ever hold.
expect_exit 0 "$client" init ctx ?alloc:plain:$(((8 << 30) + 1))
expect_grep 'CUDA_ERROR_OUT_OF_MEMORY' "$scratch/out"
