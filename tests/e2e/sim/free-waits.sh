#!/usr/bin/env bash
# The simulated driver frees like the real one: cuMemFree waits for the
# work queued before it in the context (the driver documents it as
# synchronous; on an H100 a cudaFree behind ten queued matrix products
# returned after 213 ms), and the memory stays in use until then;
# cuMemFreeAsync, stream-ordered, returns at once. The fault caught: a free
# that returns at once behind a 300 ms kernel (it took well under 1 ms), or
# a stream-ordered free that waits.
. "$(dirname "$0")/../common.inc"
use_sim GPUSHARE_SIM_MEMORY=4GiB GPUSHARE_SIM_CTX_OVERHEAD=0
client="$libexec/tests/gpushare-cuda-client"
value() { jq -r "select(.step==\"$1\") | .$2" "$scratch/out" | sed -n "${3:-1}p"; }
above() { awk -v v="$1" -v lo="$2" 'BEGIN { exit !(v >= lo) }'; }

# cuMemFree behind a 300 ms kernel: at least the kernel's remaining time
# (the launch returns at once; 250 ms leaves room for a late start only).
expect_exit 0 "$client" init ctx stream alloc:plain:64MiB launch:1:300000 free info
[ "$(value free result)" = CUDA_SUCCESS ] || fail "the free failed: $(cat "$scratch/out")"
waited=$(value free wall_ms)
above "$waited" 250 || fail "cuMemFree returned after $waited ms behind a 300 ms kernel"
[ "$(value info free_bytes)" = 4294967296 ] || fail "the memory was not freed: $(cat "$scratch/out")"

# Managed memory the same.
expect_exit 0 "$client" init ctx stream alloc:managed:64MiB launch:1:300000 free
ms=$(value free wall_ms)
above "$ms" 250 || fail "cuMemFree of managed memory returned after $ms ms behind a 300 ms kernel"

# cuMemFreeAsync returns at once (the free is ordered in its stream).
expect_exit 0 "$client" init ctx stream alloc:async:64MiB launch:1:300000 free
ms=$(value free wall_ms)
above "$ms" 250 && fail "cuMemFreeAsync waited $ms ms for the kernel"
echo "sim-free-waits: ok (cuMemFree waited $waited ms, cuMemFreeAsync $ms ms)"
