#!/usr/bin/env bash
# A job registers at start-up and `ls` shows it with every documented field:
# its pid and uid from the socket's credentials, its name, class, device
# and limit from its registration.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"

start_coordinator
start_job train GPUSHARE_JOB=train GPUSHARE_QOS=opportunistic GPUSHARE_MEM_LIMIT=4GiB \
  -- --mem-total 16GiB
start_job eval GPUSHARE_JOB=eval GPUSHARE_MEM_LIMIT=25% \
  -- --mem-total 8GiB --uuid 0f0e0d0c0b0a09080706050403020100
# Both registered inside client_start, before their first command.
job_say train status | jq -e '.registered and .job_id == 1' >/dev/null
job_say eval status | jq -e '.registered and .job_id == 2 and .mem_limit_bytes == 2147483648' >/dev/null

# The golden files were written as root: whoever runs the test, its jobs
# carry its own uid, checked here and then written as 0 for the comparison.
uid=$(id -u)
expect_exit 0 gpushare-ctl ls
jq -se --argjson pid "${job_pid[train]}" --argjson uid "$uid" \
  'map(select(.id == 1))[0] | .pid == $pid and .pids == [$pid] and .uid == $uid' \
  "$scratch/out" >/dev/null || fail "job 1 does not carry its own pid and uid"
jq -se --argjson uid "$uid" 'all(.[]; .uid == $uid)' "$scratch/out" >/dev/null ||
  fail "a job does not carry the test's uid $uid"
# The compute loop's phase depends on whether its 25 ms tick has run since
# the production job registered: "free" before, "profile" after.
jq -se 'map(.compute_phase) as $p | $p[0] == "free" and ($p[1] == "free" or $p[1] == "profile")' \
  "$scratch/out" >/dev/null || fail "unexpected compute phases: $(jq -c .compute_phase "$scratch/out")"
# Everything else but the pid is fixed by the test: compare it whole.
jq -c 'del(.pid, .pids, .compute_phase) | .uid = 0' "$scratch/out" >"$scratch/ls"
expect_golden ctl/ls.jsonl "$scratch/ls"

expect_exit 0 gpushare-ctl ls --format table
# Columns line up: the last one (STATE) starts at one offset on every line.
[ "$(awk '{ print index($0, $NF) }' "$scratch/out" | sort -u | wc -l)" -eq 1 ] ||
  fail "table columns are not aligned"
# Pids vary in width: compare the table with spaces squeezed and pids masked.
sed -E "s/ +/ /g; s/^([0-9]+ [a-z]+ )[0-9]+ $uid /\\1PID 0 /" "$scratch/out" >"$scratch/table"
expect_golden ctl/ls.table "$scratch/table"

expect_grep "job 1 'train' registered: pid ${job_pid[train]}, uid $uid, opportunistic, limit 4GiB" \
  "$scratch/coordinator.log"
