#!/usr/bin/env bash
# cuGetProcAddress_v2 answers like the driver: (name, version, flags) gives
# the newest ABI variant not newer than the version, the per-thread twin
# with flag 2, a status for misses, CUDA_ERROR_INVALID_VALUE past the driver
# version; and the address is the simulator's own. A client bound entirely
# through the resolver (per-thread too) or dlsym runs a whole job.
. "$(dirname "$0")/../common.inc"
use_sim
client="$libexec/tests/gpushare-cuda-client"

queries=(
  resolve:cuMemAlloc:3020 resolve:cuMemAlloc:3000 resolve:cuMemAlloc:13000
  resolve:cuMemAlloc:1000
  resolve:cuLaunchKernel:4000 resolve:cuLaunchKernel:7000:2 resolve:cuLaunchKernel:7000:1
  resolve:cuMemcpyHtoD:3020:2 resolve:cuMemcpyHtoD:7000:2 resolve:cuMemcpyHtoDAsync:7000:2
  resolve:cuCtxCreate:3020 resolve:cuCtxCreate:11040 resolve:cuCtxCreate:13000
  resolve:cuCtxSynchronize:2000 resolve:cuCtxSynchronize:13000
  resolve:cuStreamGetCaptureInfo:13000:2 resolve:cuMemAllocAsync:11020:2
  resolve:cuGetProcAddress:11030 resolve:cuGetProcAddress:12000
  resolve:cuMemAllocMadeUp:13000 resolve:cuMemAlloc_v2:13000
)
# Resolution works before cuInit, as the CUDA runtime needs.
expect_exit 0 "$client" "${queries[@]}" ?resolve:cuMemAlloc:13010
jq -c 'del(.library)' "$scratch/out" >"$scratch/resolved"
expect_golden sim/resolver.jsonl "$scratch/resolved"
[ "$(jq -r 'select(.library) | .library' "$scratch/out" | sort -u)" = "$libexec/sim/libcuda.so.1" ] ||
  fail "resolved addresses are not the simulator's own"

for binding in "--bind direct" "--bind dlsym" "--bind resolver" "--bind resolver --per-thread"; do
  # shellcheck disable=SC2086
  expect_exit 0 "$client" $binding init ctx alloc:plain:64MiB fill:7 stream launch:3:1000 sync \
    events:2000 check:7 free alloc:async:1MiB free
done
