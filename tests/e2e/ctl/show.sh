#!/usr/bin/env bash
# JOB is an id, a pid or a name; an unknown or ambiguous one is a clear
# error with status 1, and no output on stdout.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"

start_coordinator
start_job a GPUSHARE_JOB=train
start_job b GPUSHARE_JOB=train
start_job c GPUSHARE_JOB=eval

for selector in 3 "${job_pid[c]}" eval; do
  expect_exit 0 gpushare-ctl show "$selector"
  jq -e --argjson pid "${job_pid[c]}" '.kind == "job" and .id == 3 and .pid == $pid' \
    "$scratch/out" >/dev/null || fail "show $selector did not find job 3"
  [ "$(wc -l <"$scratch/out")" -eq 1 ] || fail "show printed more than one record"
done

expect_exit 1 gpushare-ctl show nosuchjob
[ -s "$scratch/out" ] && fail "an unknown job printed something on stdout"
expect_grep "^gpushare-ctl: error: no job 'nosuchjob' \(not the id, pid or name of a job\)$" "$scratch/err"

expect_exit 1 gpushare-ctl show train
expect_grep "^gpushare-ctl: error: job name 'train' is ambiguous \(ids 1, 2\): use an id or a pid$" \
  "$scratch/err"

for verb in set pause resume; do
  args=(nosuchjob); [ "$verb" = set ] && args+=(--mem-limit 1GiB)
  expect_exit 1 gpushare-ctl "$verb" "${args[@]}"
  expect_grep "no job 'nosuchjob'" "$scratch/err"
done

expect_exit 0 gpushare-ctl show 1 --format table
expect_grep "^ID +NAME +PID" "$scratch/out"
expect_grep "^1 +train +${job_pid[a]} " "$scratch/out"
