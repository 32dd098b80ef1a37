#!/usr/bin/env bash
# CUDA-runtime programs (static and shared cudart, as PyTorch uses) bind the
# driver by dlopen + dlsym(handle, "cuGetProcAddress_v2") and then resolve
# every entry point at historical versions, with and without the
# per-thread flag. The runtime cannot run on the simulated driver, so this
# asserts from the interposer's debug log that those lookups were answered
# with our wrappers; the program itself is expected to fail afterwards.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
nvcc=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
[ -x "$nvcc" ] || skip "nvcc is not installed"

source_file="$GPUSHARE_SOURCE_DIR/tests/interpose/cudart_probe.cu"
"$nvcc" -O0 -arch=sm_80 -cudart static -o "$scratch/cudart-static" "$source_file"
"$nvcc" -O0 -arch=sm_80 -cudart shared -o "$scratch/cudart-shared" "$source_file"

for flavour in static shared; do
  env LD_PRELOAD="$interposer" GPUSHARE_LOG=debug GPUSHARE_MEM_LIMIT=1GiB \
    "$scratch/cudart-$flavour" >"$scratch/out" 2>"$scratch/err" || true
  expect_grep '^gpushare\[[0-9]+\]: dlsym\(cuGetProcAddress_v2\): wrapped$' "$scratch/err"
  expect_grep 'cuGetProcAddress\(cuGetProcAddress, 12000, 0\): cuGetProcAddress_v2, wrapped$' "$scratch/err"
  expect_grep 'cuGetProcAddress\(cuMemAlloc, 3020, 0\): cuMemAlloc_v2, wrapped$' "$scratch/err"
  expect_grep 'cuGetProcAddress\(cuLaunchKernel, 4000, 0\): cuLaunchKernel, wrapped$' "$scratch/err"
  expect_grep 'cuGetProcAddress\(cuLaunchKernel, 7000, 2\): cuLaunchKernel_ptsz, wrapped$' "$scratch/err"
  expect_grep 'cuGetProcAddress\(cuMemAllocAsync, 11020, 2\): cuMemAllocAsync_ptsz, wrapped$' "$scratch/err"
  expect_grep 'cuGetProcAddress\(cuInit, 2000, 0\): cuInit, wrapped$' "$scratch/err"
  # Nothing the runtime resolved that we wrap was handed out unwrapped.
  if grep -q 'passed through unwrapped' "$scratch/err"; then
    fail "$flavour cudart: a wrapped variant escaped: $(grep 'unwrapped' "$scratch/err" | head -3)"
  fi
  # And the runtime did stop at the simulated driver's wall, as expected.
  expect_grep '^cudart result=[1-9]' "$scratch/out"
done
