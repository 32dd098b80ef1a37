#!/usr/bin/env bash
# A job whose telemetry stops for 2 s is listed as `stale` (gpushare-ctl(1),
# ls), and as `running` again once its telemetry resumes. The job's process
# is stopped (SIGSTOP), so its client thread stops writing telemetry while
# its connection stays open. Lower bound: not stale before 2 s have passed
# since it was stopped (load only delays the listing); upper bound generous.
. "$(dirname "$0")/common.inc"
. "$e2e_dir/coord.inc"

state_of() { gpushare-ctl show "$1" | jq -r .state; }
is_state() { [ "$(state_of "$1")" = "$2" ]; }

start_coordinator
start_job quiet GPUSHARE_JOB=quiet
start_job busy GPUSHARE_JOB=busy
wait_for "telemetry from both jobs" 5 sh -c \
  "gpushare-ctl ls | jq -se 'length == 2 and all(.[]; .state == \"running\")'"

kill -STOP "${job_pid[quiet]}"
stopped=$(now_ms)
# Until 2 s have passed the job is running; poll while that is certain.
while [ $(( $(now_ms) - stopped )) -lt 1500 ]; do
  state=$(state_of quiet)
  elapsed=$(( $(now_ms) - stopped ))
  # A listing that began before 1.9 s cannot be stale (the last heartbeat
  # may predate the stop by one 50 ms tick).
  [ "$state" = running ] || [ "$elapsed" -ge 1900 ] ||
    fail "the job was listed '$state' ${elapsed} ms after its telemetry stopped"
  sleep 0.1
done
wait_for "the stopped job to be listed stale" 15 is_state quiet stale
stale_ms=$(( $(now_ms) - stopped ))
[ "$stale_ms" -ge 1900 ] || fail "stale after ${stale_ms} ms, before 2 s"
is_state busy running || fail "the other job is not running: $(gpushare-ctl show busy)"
expect_exit 0 gpushare-ctl ls --format table
expect_grep "^ *1 +quiet .* stale$" "$scratch/out"

kill -CONT "${job_pid[quiet]}"
wait_for "the job to be running again" 5 is_state quiet running
echo "coord-stale: ok (listed stale ${stale_ms} ms after the job stopped)"
