#!/usr/bin/env bash
# On the simulated GPU, through gpushare-run and the interposer: a paused
# job's cuLaunchKernel waits until `resume`, and its memory stays.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"

start_coordinator
start_held sim -- gpushare-run --sim --name simjob -- "$gs_client" alloc 1GiB hold launch 20
wait_for "the job to register" 5 listed "${job_pid[sim]}"
expect_exit 0 gpushare-ctl pause simjob
release sim
if timeout 0.5 bash -c "until grep -q '^launch' '$scratch/job-sim.out'; do sleep 0.01; done"; then
  fail "a paused job launched: $(cat "$scratch/job-sim.out")"
fi
show_has simjob '.state == "paused" and .mem_used_bytes >= 1073741824' ||
  fail "the paused job does not show as paused with its memory"
expect_exit 0 gpushare-ctl resume simjob
wait_for "the launches after resume" 5 grep -q '^launch count=20 result=0$' "$scratch/job-sim.out"
{ wait "${job_pid[sim]}"; } || fail "the job failed: $(cat "$scratch/job-sim.err")"
