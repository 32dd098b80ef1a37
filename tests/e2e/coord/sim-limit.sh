#!/usr/bin/env bash
# On the simulated GPU, through gpushare-run and the interposer: a running
# job registers, `ls` shows the memory it holds, and `set` lowering its
# limit below that makes its next cuMemAlloc fail with
# CUDA_ERROR_OUT_OF_MEMORY while what it holds stays its own.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"

start_coordinator
start_held sim -- gpushare-run --sim --name simjob --mem-limit 4GiB -- \
  "$gs_client" alloc 3GiB hold alloc 1GiB free
wait_for "the job's 3 GiB in ls" 5 \
  show_has simjob ".mem_used_bytes >= 3221225472 and .mem_limit_bytes == 4294967296"
show_has simjob '.pid == $pid' --argjson pid "${job_pid[sim]}" ||
  fail "ls does not show the job's own pid"

expect_exit 0 gpushare-ctl set simjob --mem-limit 2GiB
release sim
{ wait "${job_pid[sim]}"; } || fail "the job failed: $(cat "$scratch/job-sim.err")"
expect_grep "^alloc bytes=1073741824 result=2$" "$scratch/job-sim.out"
# The 3 GiB it held before is still its own to free.
expect_grep "^free bytes=3221225472 result=0$" "$scratch/job-sim.out"
