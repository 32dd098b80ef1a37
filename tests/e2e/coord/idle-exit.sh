#!/usr/bin/env bash
# `serve --idle-exit` (for a per-user coordinator started on demand) exits
# with status 0 once no job has been registered for the grace period: from
# the start, and after the last job leaves; never while a job is registered.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"

# No job ever comes: it exits after the grace.
start=$(now_ms)
start_coordinator --idle-exit --idle-grace 300ms --log-file "$scratch/serve.log"
{ wait "$coordinator_pid"; } || fail "an idle coordinator exited with status $?"
elapsed=$(( $(now_ms) - start ))
[ "$elapsed" -ge 300 ] || fail "it exited after ${elapsed} ms, before its grace"
[ -e "$GPUSHARE_SOCKET" ] && fail "the idle coordinator left its socket"
expect_grep "no jobs for 300ms; exiting$" "$scratch/serve.log"

# A job keeps it alive well past the grace; after the job leaves, it goes.
start_coordinator --idle-exit --idle-grace 300ms
start_job j GPUSHARE_JOB=j
job_say j wait-registered 1 | jq -e '.registered' >/dev/null || fail "the job did not register"
if timeout 1 tail --pid="$coordinator_pid" -f /dev/null; then
  fail "the coordinator exited while a job was registered"
fi
end_job j
timeout 5 tail --pid="$coordinator_pid" -f /dev/null ||
  fail "the coordinator did not exit after the last job left"
{ wait "$coordinator_pid"; } || fail "exit status $? after idling"
