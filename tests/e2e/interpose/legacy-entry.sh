#!/usr/bin/env bash
# The legacy entry points: cuMemAlloc, cuMemAllocPitch,
# cuMemFree, cuMemGetInfo, cuDeviceTotalMem, cuArrayCreate, cuArray3DCreate,
# cuCtxCreate and cuCtxDestroy requested through cuGetProcAddress at CUDA
# 2000 and 3000 get the 32-bit-size ABI. The interposer once handed them
# out unwrapped (every one answered from libcuda.so.1): now each is its own
# wrapper, so a 2 GiB request through the 32-bit cuMemAlloc is refused under
# a 1 GiB limit before the driver sees it, and the 32-bit cuMemGetInfo shows
# the virtual GPU's 1 GiB.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"

attack="$libexec/tests/gs-attack"
expect_exit 0 gpushare-run --sim --no-coordinator --mem-limit 1GiB -- "$attack" legacy </dev/null
[ "$(grep -c '^legacy name=' "$scratch/out")" -eq 18 ] || fail "not every legacy name was asked"
if grep '^legacy name=' "$scratch/out" | grep -v 'result=0 owner=libgpushare-interpose.so$'; then
  fail "legacy entry points handed out unwrapped"
fi
expect_grep "^legacy alloc_result=2 info_result=0 total=1073741824$" "$scratch/out"

# Without a limit the wrappers pass the call on (the simulated driver does
# not implement the 32-bit ABI: 801, CUDA_ERROR_NOT_SUPPORTED).
expect_exit 0 gpushare-run --sim --no-coordinator -- "$attack" legacy </dev/null
expect_grep "^legacy alloc_result=801 info_result=0 total=[0-9]+$" "$scratch/out"
echo "interpose-legacy-entry: ok"
