#!/usr/bin/env bash
# Without --socket or GPUSHARE_SOCKET, a per-user coordinator listens on
# $XDG_RUNTIME_DIR/gpushare/gpushare.sock (the directory made mode 0700),
# and jobs and gpushare-ctl find it there; it refuses a directory that
# other users can enter.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"

[ -e /run/gpushare/gpushare.sock ] && skip "a node-wide coordinator socket exists on this machine"
unset GPUSHARE_SOCKET
socket="$XDG_RUNTIME_DIR/gpushare/gpushare.sock"
start_coordinator
[ -S "$socket" ] || fail "no socket at $socket"
[ "$(stat -c %a "$XDG_RUNTIME_DIR/gpushare")" = 700 ] || fail "the socket directory is not 0700"
start_job j GPUSHARE_JOB=j
job_say j status | jq -e '.registered' >/dev/null || fail "the job did not find the coordinator"
expect_exit 0 gpushare-ctl --socket "$socket" show j
stop_coordinator
end_job j

chmod 0755 "$XDG_RUNTIME_DIR/gpushare"
expect_exit 1 gpushare-ctl serve
expect_grep "is accessible to other users \(mode must be 0700\): refusing to use it" "$scratch/err"
# The same when the path is given explicitly, as gpushare-run gives it.
expect_exit 1 gpushare-ctl --socket "$socket" serve
expect_grep "is accessible to other users" "$scratch/err"
rm -r "$XDG_RUNTIME_DIR/gpushare"
export GPUSHARE_SOCKET=$socket
start_coordinator
stop_coordinator
[ "$(stat -c %a "$XDG_RUNTIME_DIR/gpushare")" = 700 ] || fail "--socket made the per-user directory public"
