#!/usr/bin/env bash
# A --suspendable job's plain allocations are VMM-backed. Each
# is rounded up to the 2 MiB granularity and charged so (two 1 MiB
# allocations fill a 4 MiB limit; a third is CUDA_ERROR_OUT_OF_MEMORY);
# data written through the pointer reads back; free gives the memory back;
# and a destroyed or reset context's allocations are freed with it (VMM
# memory would otherwise outlive its context in the driver).
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/mem.inc"
export GPUSHARE_SIM_MEMORY=1GiB GPUSHARE_SIM_CTX_OVERHEAD=0

gpushare-run --sim --no-coordinator --suspendable --mem-limit 4MiB -- "$c" init ctx \
  alloc:plain:1MiB fill:1 check:1 alloc:pitch:1MiB ?alloc:plain:1MiB >"$s/limit.out" 2>&1 ||
  fail "$(cat "$s/limit.out")"
[ "$(field "$s/limit.out" alloc result 3)" = CUDA_ERROR_OUT_OF_MEMORY ] ||
  fail "a third 2 MiB charge under a 4 MiB limit: $(cat "$s/limit.out")"

gpushare-run --sim --no-coordinator --suspendable -- "$c" init ctx-create alloc:plain:256MiB \
  info ctx-destroy ctx alloc:plain:128MiB free info alloc:plain:64MiB ctx-reset:0 ctx info \
  >"$s/ctx.out" 2>&1 || fail "$(cat "$s/ctx.out")"
[ "$(field "$s/ctx.out" info free_bytes 1)" = $((768 << 20)) ] || fail "$(cat "$s/ctx.out")"
[ "$(field "$s/ctx.out" info free_bytes 2)" = $((1 << 30)) ] ||
  fail "after a destroyed context and a free: $(cat "$s/ctx.out")"
[ "$(field "$s/ctx.out" info free_bytes 3)" = $((1 << 30)) ] ||
  fail "after a context reset: $(cat "$s/ctx.out")"
