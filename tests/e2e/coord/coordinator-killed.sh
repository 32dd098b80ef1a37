#!/usr/bin/env bash
# A coordinator killed by SIGKILL leaves its jobs running at their last
# limits, with no call blocked (a paused job resumes); a new coordinator
# replaces the stale socket, and the jobs register with it within 2 s,
# keeping their ids and limits, and the decisions of the dead coordinator
# (from its state file): the job it had paused is paused again. Prints the
# time measured.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"

start_coordinator
start_job a GPUSHARE_JOB=a GPUSHARE_MEM_LIMIT=4GiB
start_job b GPUSHARE_JOB=b GPUSHARE_QOS=opportunistic
gpushare-ctl set a --mem-limit 1GiB >/dev/null
gpushare-ctl set b --mem-limit 2GiB >/dev/null
gpushare-ctl pause b >/dev/null
before=$(wc -l <"$scratch/job-b.out")
echo "launch 3" >&"${job_fd[b]}"   # held by the pause

stop_coordinator KILL
[ -S "$GPUSHARE_SOCKET" ] || fail "expected the killed coordinator's socket file to remain"
# The held launches go on: nobody is left to resume them.
wait_for "the paused job's launches after the coordinator died" 2 \
  lines_above "$scratch/job-b.out" "$before"
tail -n 1 "$scratch/job-b.out" | jq -e '.launches == 3 and .paused == false' >/dev/null ||
  fail "job b's launches did not go through"
# Last limits hold, and every call answers.
a_unregistered() { job_say a status | jq -e '.registered == false'; }
wait_for "job a to notice" 2 a_unregistered
job_say a alloc 2GiB | jq -e '.ok == false and .mem_limit_bytes == 1073741824' >/dev/null ||
  fail "job a lost its last limit"
job_say a launch 100 | jq -e '.launches == 100' >/dev/null || fail "job a cannot launch"
job_say b status | jq -e '.mem_limit_bytes == 2147483648 and .qos == "opportunistic"' >/dev/null ||
  fail "job b lost its last limit or class"

start=$(now_ms)
start_coordinator
wait_for "both jobs to register again" 2 sh -c \
  "[ \$(gpushare-ctl ls | jq -s length) -eq 2 ]"
echo "jobs registered again $(( $(now_ms) - start )) ms after the new coordinator was started"
gpushare-ctl ls >"$scratch/ls"
jq -se 'map({(.name): [.id, .mem_limit_bytes, .devices[0].start_limit_bytes, .state]}) | add ==
  {"a": [1, 1073741824, 4294967296, "running"], "b": [2, 2147483648, null, "paused"]}' \
  "$scratch/ls" >/dev/null || { cat "$scratch/ls"; fail "ids or limits changed across the restart"; }
job_say a status | jq -e '.registered and .registrations == 2' >/dev/null || fail "job a is not registered"
