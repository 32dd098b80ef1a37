#!/usr/bin/env bash
# `pause` holds a job's kernel launches until `resume`; its memory stays.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"

start_coordinator
start_job train GPUSHARE_JOB=train
job_say train alloc 2GiB >/dev/null
job_say train launch 10 | jq -e '.launches == 10' >/dev/null || fail "launches did not count"

expect_exit 0 gpushare-ctl pause train
jq -e '.state == "paused"' "$scratch/out" >/dev/null || fail "pause did not report state paused"
job_say train status | jq -e '.paused and .mem_used_bytes == 2147483648' >/dev/null ||
  fail "the job does not see itself paused with its memory"

# A launch now waits. Give it a generous window to (wrongly) get through.
before=$(wc -l <"$scratch/job-train.out")
echo "launch 5" >&"${job_fd[train]}"
if timeout 0.5 bash -c "until [ \$(wc -l <'$scratch/job-train.out') -gt $before ]; do sleep 0.01; done"; then
  fail "a paused job launched: $(tail -n 1 "$scratch/job-train.out")"
fi
show_has train '.state == "paused" and .launches == 10' ||
  fail "ls does not show the job paused at 10 launches"

# Resume releases the held launches at once.
start=$(now_ms)
expect_exit 0 gpushare-ctl resume train
jq -e '.state == "running"' "$scratch/out" >/dev/null || fail "resume did not report state running"
wait_for "the held launches to go through" 2 lines_above "$scratch/job-train.out" "$before"
tail -n 1 "$scratch/job-train.out" | jq -e '.launches == 15 and .paused == false' >/dev/null ||
  fail "the held launches did not complete"
echo "held launches went through $(( $(now_ms) - start )) ms after resume was started"
job_say train status | jq -e '.mem_used_bytes == 2147483648' >/dev/null || fail "memory changed"

# Pausing twice, or resuming a running job, is harmless.
expect_exit 0 gpushare-ctl resume train
expect_exit 0 gpushare-ctl pause train
expect_exit 0 gpushare-ctl pause train
expect_exit 0 gpushare-ctl resume train --format table
expect_grep "^1 +train +.* running$" "$scratch/out"
