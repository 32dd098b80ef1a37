#!/usr/bin/env bash
# A job killed by SIGKILL disappears from `ls`, and its memory from the
# node's totals, within 1 s. Prints the time measured.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"

start_coordinator
start_job victim GPUSHARE_JOB=victim -- --mem-total 16GiB
start_job other GPUSHARE_JOB=other -- --mem-total 16GiB
job_say victim alloc 6GiB >/dev/null
job_say other alloc 1GiB >/dev/null
wait_for "telemetry of both jobs" 2 sh -c \
  "gpushare-ctl node | jq -se '.[-1].mem_used_bytes == 7516192768'"

start=$(now_ms)
disown "${job_pid[victim]}"  # no "Killed" notice from the shell
kill -KILL "${job_pid[victim]}"
until not_listed "${job_pid[victim]}"; do
  [ $(( $(now_ms) - start )) -lt 1000 ] || fail "the killed job is still listed after 1 s"
  sleep 0.005
done
elapsed=$(( $(now_ms) - start ))
echo "killed job gone from ls after ${elapsed} ms (including running gpushare-ctl)"
gpushare-ctl node | jq -se '.[0].mem_free_bytes == 16106127360 and .[-1].jobs == 1' >/dev/null ||
  fail "the killed job's memory still counts as used"
listed "${job_pid[other]}" || fail "the other job went too"
expect_grep "job 1 'victim' \(pid ${job_pid[victim]}\) (exited|disconnected)" "$scratch/coordinator.log"
# The coordinator's own log line says when it forgot the job (ms resolution).
stamp=$(grep -m1 "job 1 'victim'.*\(exited\|disconnected\)" "$scratch/coordinator.log" |
  sed -E 's/^gpushare-ctl: note: ([^ ]+) .*/\1/')
echo "the coordinator forgot the killed job $(( $(date -d "$stamp" +%s%3N) - start )) ms after SIGKILL"
