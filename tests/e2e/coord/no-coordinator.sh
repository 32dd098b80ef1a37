#!/usr/bin/env bash
# A job started with no coordinator reachable starts at once and enforces
# the limit it was started with; when a coordinator appears, the job
# registers with it within 2 s. gpushare-ctl says clearly that nobody is
# there, and tells a dead coordinator's socket from none at all.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"

expect_exit 1 gpushare-ctl ls
expect_grep "^gpushare-ctl: error: no coordinator is running on $GPUSHARE_SOCKET; start one with 'gpushare-ctl serve'$" \
  "$scratch/err"
[ -s "$scratch/out" ] && fail "ls printed records without a coordinator"

start_job lonely GPUSHARE_JOB=lonely GPUSHARE_MEM_LIMIT=1GiB
job_say lonely status | jq -e '.registered == false and .mem_limit_bytes == 1073741824' >/dev/null ||
  fail "the job should run unregistered on its own limit"
job_say lonely alloc 768MiB | jq -e '.ok' >/dev/null || fail "an allocation under the limit failed"
job_say lonely alloc 512MiB | jq -e '.ok == false and .error == "CUDA_ERROR_OUT_OF_MEMORY"' >/dev/null ||
  fail "the job's own limit was not enforced"
job_say lonely launch 10 | jq -e '.launches == 10' >/dev/null || fail "launches blocked"

start=$(now_ms)
start_coordinator
wait_for "the job to register" 2 listed "${job_pid[lonely]}"
echo "job registered $(( $(now_ms) - start )) ms after the coordinator was started"
show_has lonely '.mem_limit_bytes == 1073741824 and .mem_used_bytes == 805306368' ||
  fail "the coordinator does not show the job's limit and use"

# A dead coordinator's socket is named as such.
stop_coordinator KILL
expect_exit 1 gpushare-ctl ls
expect_grep "no coordinator is running on .* \(a stale socket is left there\)" "$scratch/err"
