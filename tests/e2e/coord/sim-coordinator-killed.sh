#!/usr/bin/env bash
# On the simulated GPU: a coordinator killed by SIGKILL leaves a running job
# on its last limit, with no CUDA call blocked; a new coordinator sees the
# job again within 2 s.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"

start_coordinator
start_held sim -- gpushare-run --sim --name simjob --mem-limit 4GiB -- \
  "$gs_client" alloc 512MiB hold alloc 1GiB launch 10 alloc 256MiB
wait_for "the job to register" 5 listed "${job_pid[sim]}"
gpushare-ctl set simjob --mem-limit 1GiB >/dev/null
stop_coordinator KILL

start=$(now_ms)
start_coordinator
wait_for "the job to register again" 2 listed "${job_pid[sim]}"
echo "job registered again $(( $(now_ms) - start )) ms after the new coordinator started"
show_has simjob '.mem_limit_bytes == 1073741824' ||
  fail "the job's last limit did not survive the restart"
stop_coordinator KILL

# With no coordinator at all now, the job runs on: over the limit fails,
# launches and smaller allocations go through.
release sim
{ wait "${job_pid[sim]}"; } || fail "the job failed: $(cat "$scratch/job-sim.err")"
expect_grep "^alloc bytes=1073741824 result=2$" "$scratch/job-sim.out"
expect_grep "^launch count=10 result=0$" "$scratch/job-sim.out"
expect_grep "^alloc bytes=268435456 result=0$" "$scratch/job-sim.out"
