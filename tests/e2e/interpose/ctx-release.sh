#!/usr/bin/env bash
# Through the interposer, destroying a context, releasing the primary
# context's last reference, or resetting the primary context gives back
# what was allocated in it (gpushare-run(1)): a job under a 1 GiB limit can
# allocate 700 MiB again after each, where without the release the second
# 700 MiB would pass the limit. The job's virtual free memory says the same.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
cuda_client="$libexec/tests/gpushare-cuda-client"
mib=$((1 << 20))
run=(gpushare-run --sim --no-coordinator --mem-limit 1GiB --)
free_list() { jq -r 'select(.step=="info") | .free_bytes / 1048576' "$scratch/out" | tr '\n' ' '; }
results() { jq -r 'select(.step=="alloc") | .result' "$scratch/out" | tr '\n' ' '; }

# The control: without a release, the second 700 MiB is over the limit.
expect_exit 0 "${run[@]}" "$cuda_client" init ctx alloc:plain:700MiB ?alloc:plain:700MiB
[ "$(results)" = "CUDA_SUCCESS CUDA_ERROR_OUT_OF_MEMORY " ] ||
  fail "control: the limit did not refuse the second allocation: $(cat "$scratch/out")"

# cuCtxDestroy of a created context.
expect_exit 0 "${run[@]}" "$cuda_client" init ctx ctx-create alloc:plain:700MiB info ctx-destroy ctx info \
  alloc:plain:700MiB
[ "$(results)" = "CUDA_SUCCESS CUDA_SUCCESS " ] || fail "destroy: $(cat "$scratch/out")"
[ "$(free_list)" = "324 1024 " ] || fail "destroy: $(free_list)MiB free, want 324 then 1024"

# cuDevicePrimaryCtxRelease of the last reference.
expect_exit 0 "${run[@]}" "$cuda_client" init ctx alloc:plain:700MiB ctx-release ctx info alloc:plain:700MiB
[ "$(results)" = "CUDA_SUCCESS CUDA_SUCCESS " ] || fail "release: $(cat "$scratch/out")"
[ "$(free_list)" = "1024 " ] || fail "release: $(free_list)MiB free, want 1024"

# cuDevicePrimaryCtxReset, with the primary context still retained.
expect_exit 0 "${run[@]}" "$cuda_client" init ctx alloc:plain:700MiB info ctx-reset ctx info \
  alloc:plain:700MiB
[ "$(results)" = "CUDA_SUCCESS CUDA_SUCCESS " ] || fail "reset: $(cat "$scratch/out")"
[ "$(free_list)" = "324 1024 " ] || fail "reset: $(free_list)MiB free, want 324 then 1024"

# A context's own memory comes back too: with 200 MiB per context, a
# created context and 500 MiB in it leave 124 MiB, and all of it is back
# after the destroy.
GPUSHARE_SIM_CTX_OVERHEAD=200MiB expect_exit 0 "${run[@]}" "$cuda_client" init ctx ctx-create \
  alloc:plain:500MiB info ctx-destroy ctx info alloc:plain:800MiB
[ "$(free_list)" = "124 824 " ] || fail "context memory: $(free_list)MiB free, want 124 then 824"
[ "$(results)" = "CUDA_SUCCESS CUDA_SUCCESS " ] || fail "context memory: $(cat "$scratch/out")"
