#!/usr/bin/env bash
# The memory limit holds whichever way a program reaches the driver: direct
# calls, dlopen + dlsym (as the CUDA runtime binds), cuGetProcAddress_v2 and
# the old cuGetProcAddress, at old and new versions and with the
# per-thread-default-stream flag. Without the interposer the same program
# gets both allocations, so this test can fail.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"

# Control: no interposer, no limit.
"$gs_client" --bind dlsym alloc 600MiB alloc 600MiB >"$scratch/out"
[ "$(grep -c 'result=0' "$scratch/out")" -eq 2 ] || fail "control run did not get both allocations"

routes=(
  "direct"
  "--bind dlsym"
  "--bind resolver --version 13000"
  "--bind resolver --version 3020"
  "--bind resolver --version 13000 --flags 2"
  "--bind resolver-v1 --version 12000"
)
for route in "${routes[@]}"; do
  if [ "$route" = direct ]; then program=("$gs_client_direct"); else program=("$gs_client" $route); fi
  client GPUSHARE_MEM_LIMIT=1GiB GPUSHARE_LOG=debug -- "${program[@]}" alloc 600MiB alloc 600MiB launch 10
  grep -q '^alloc bytes=629145600 result=0$' "$scratch/out" || fail "$route: the first allocation failed"
  [ "$(grep '^alloc' "$scratch/out" | sed -n 2p)" = "alloc bytes=629145600 result=2" ] ||
    fail "$route: the allocation over the limit was not refused with CUDA_ERROR_OUT_OF_MEMORY"
  expect_grep '^launch count=10 result=0$' "$scratch/out"
  expect_grep "^gpushare\[[0-9]+\]: cuMemAlloc_v2\(629145600 bytes\) refused on device 0" "$scratch/err"
done

# What the resolver routes logged: the exact variants, wrapped.
client GPUSHARE_LOG=debug -- "$gs_client" --bind resolver --version 3020 alloc 1MiB
expect_grep 'dlsym\(cuGetProcAddress_v2\): wrapped' "$scratch/err"
expect_grep 'cuGetProcAddress\(cuGetProcAddress, 12000, 0\): cuGetProcAddress_v2, wrapped' "$scratch/err"
expect_grep 'cuGetProcAddress\(cuMemAlloc, 3020, 0\): cuMemAlloc_v2, wrapped' "$scratch/err"
client GPUSHARE_LOG=debug -- "$gs_client" --bind resolver --version 13000 --flags 2 launch 1
expect_grep 'cuGetProcAddress\(cuLaunchKernel, 13000, 2\): cuLaunchKernel_ptsz, wrapped' "$scratch/err"
expect_grep 'cuGetProcAddress\(cuMemAllocAsync, 13000, 2\): cuMemAllocAsync_ptsz, wrapped' "$scratch/err"
# Copies are wrapped (held while suspended); module loading
# is an entry point we do not wrap.
expect_grep 'cuGetProcAddress\(cuMemcpyHtoD, 13000, 2\): cuMemcpyHtoD_v2_ptds, wrapped' "$scratch/err"
expect_grep 'cuGetProcAddress\(cuModuleLoadData, 13000, 2\): cuModuleLoadData, passed through' "$scratch/err"
