#!/usr/bin/env bash
# On the simulated GPU: a job killed by SIGKILL disappears from `ls` within
# 1 s, and its memory is free for the next job at once.
. "$(dirname "$0")/../common.inc"
export GPUSHARE_SIM_MEMORY=8GiB
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"

start_coordinator
start_held victim -- gpushare-run --sim --name victim -- "$gs_client" alloc 6GiB hold
wait_for "the victim's memory in ls" 5 show_has victim ".mem_used_bytes >= 6442450944"

disown "${job_pid[victim]}"
start=$(now_ms)
kill -KILL "${job_pid[victim]}"
wait_for "the killed job to leave ls" 1 not_listed "${job_pid[victim]}"
echo "killed job gone from ls after $(( $(now_ms) - start )) ms"
gpushare-run --sim --name next -- "$gs_client" alloc 6GiB >"$scratch/next" 2>&1 ||
  fail "the next job failed: $(cat "$scratch/next")"
expect_grep "^alloc bytes=6442450944 result=0$" "$scratch/next"
