#!/usr/bin/env bash
# Plays a job that escapes its memory limit by creating contexts (each holds
# device memory of its own, 256 MiB here): under a 1 GiB limit the interposer
# refuses the context that would pass it with CUDA_ERROR_OUT_OF_MEMORY, like
# an allocation, and another job can still start and allocate while the
# first holds its contexts. The control without the interposer shows the
# escape: the contexts take the whole 16 GiB GPU.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"

export GPUSHARE_SIM_MEMORY=16GiB GPUSHARE_SIM_CTX_OVERHEAD=256MiB
run=(gpushare-run --sim --no-coordinator --mem-limit 1GiB --)

GPUSHARE_DISABLE=1 "${run[@]}" "$gs_client" contexts 100 >"$scratch/control" 2>&1
created=$(sed -n 's/^contexts created=\([0-9]*\).*/\1/p' "$scratch/control")
[ "${created:-0}" -ge 60 ] || fail "control: only ${created:-0} contexts without the interposer"

# The primary context and three more make 1 GiB: the fourth is refused.
start_held greedy -- "${run[@]}" "$gs_client" contexts 100 hold
expect_grep "^contexts created=3 result=2$" "$scratch/job-greedy.out"
expect_exit 0 "${run[@]}" "$gs_client" alloc 512MiB free
expect_grep "^alloc bytes=536870912 result=0$" "$scratch/out"
release greedy
{ wait "${job_pid[greedy]}"; } || fail "the greedy job failed: $(cat "$scratch/job-greedy.err")"
echo "interpose-context-limit: ok (control: $created contexts without the interposer)"
