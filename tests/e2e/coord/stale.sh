#!/usr/bin/env bash
# A job whose telemetry stops for 2 s is listed as `stale` (gpushare-ctl(1),
# ls), and as `running` again once its telemetry resumes. The job's process
# is stopped (SIGSTOP), so its client thread stops writing telemetry while
# its connection stays open. Bounds with margins only a fault passes: still
# running 1 s after the stop, stale within 15 s.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"

state_of() { gpushare-ctl show "$1" | jq -r .state; }
is_state() { [ "$(state_of "$1")" = "$2" ]; }

start_coordinator
start_job quiet GPUSHARE_JOB=quiet
start_job busy GPUSHARE_JOB=busy
wait_for "telemetry from both jobs" 5 sh -c \
  "gpushare-ctl ls | jq -se 'length == 2 and all(.[]; .state == \"running\")'"

# A stopped job would not act on the cleanup's SIGTERM: continue it first.
trap 'status=$?; set +e; kill -CONT "${job_pid[quiet]}" 2>/dev/null; (exit "$status"); cleanup' EXIT
kill -STOP "${job_pid[quiet]}"
stopped=$(now_ms)
# Well within the 2 s the job is still running (its last heartbeat may
# predate the stop by a tick, or more on a loaded machine: 1 s of margin).
while :; do
  state=$(state_of quiet)
  elapsed=$(( $(now_ms) - stopped ))
  [ "$elapsed" -lt 1000 ] || break
  [ "$state" = running ] || fail "the job was listed '$state' ${elapsed} ms after its telemetry stopped"
  sleep 0.1
done
wait_for "the stopped job to be listed stale" 15 is_state quiet stale
stale_ms=$(( $(now_ms) - stopped ))
[ "$stale_ms" -ge 1000 ] || fail "stale after ${stale_ms} ms, well before 2 s"
is_state busy running || fail "the other job is not running: $(gpushare-ctl show busy)"
expect_exit 0 gpushare-ctl ls --format table
expect_grep "^ *1 +quiet .* stale$" "$scratch/out"

kill -CONT "${job_pid[quiet]}"
wait_for "the job to be running again" 5 is_state quiet running
echo "coord-stale: ok (listed stale ${stale_ms} ms after the job stopped)"
