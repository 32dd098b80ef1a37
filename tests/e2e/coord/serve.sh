#!/usr/bin/env bash
# `serve` announces itself when listening, refuses to start over a live
# coordinator or over a file that is not a socket, replaces a dead
# coordinator's socket, logs to --log-file, and stops cleanly on SIGTERM
# (and SIGINT), removing its socket.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"

start_coordinator --log-file "$scratch/serve.log"
[ -S "$GPUSHARE_SOCKET" ] || fail "no socket at $GPUSHARE_SOCKET"
[ "$(stat -c %a "$GPUSHARE_SOCKET")" = 666 ] || fail "the socket is not mode 0666"
expect_grep "coordinator $coordinator_pid listening on $GPUSHARE_SOCKET$" "$scratch/serve.log"
expect_grep '^gpushare-ctl: note: [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z ' "$scratch/serve.log"

# A second coordinator on the same socket is refused.
expect_exit 1 gpushare-ctl serve
expect_grep "^gpushare-ctl: error: a coordinator is already running on $GPUSHARE_SOCKET \(pid $coordinator_pid\)$" \
  "$scratch/err"
[ -s "$scratch/out" ] && fail "a refused serve printed a ready record"
gpushare-ctl ls >/dev/null || fail "the first coordinator was disturbed"

# SIGTERM: status 0, the socket removed, the log says why.
stop_coordinator TERM
[ "$coordinator_status" -eq 0 ] || fail "serve exited $coordinator_status on SIGTERM"
[ -e "$GPUSHARE_SOCKET" ] && fail "the socket is still there after SIGTERM"
expect_grep "stopping on SIGTERM$" "$scratch/serve.log"

# SIGKILL leaves a stale socket, which the next coordinator replaces.
start_coordinator
stop_coordinator KILL
[ -S "$GPUSHARE_SOCKET" ] || fail "expected a stale socket after SIGKILL"
start_coordinator
gpushare-ctl ls >/dev/null || fail "the new coordinator does not answer"
stop_coordinator INT
[ "$coordinator_status" -eq 0 ] || fail "serve exited $coordinator_status on SIGINT"

# Something else at the socket path is never replaced.
echo precious >"$GPUSHARE_SOCKET"
expect_exit 1 gpushare-ctl serve
expect_grep "^gpushare-ctl: error: '$GPUSHARE_SOCKET' exists and is not a socket: refusing to replace it$" \
  "$scratch/err"
[ "$(cat "$GPUSHARE_SOCKET")" = precious ] || fail "the file at the socket path was touched"

# Options are checked before the socket is taken.
rm -f "$GPUSHARE_SOCKET"
expect_exit 2 gpushare-ctl serve --admin-group no-such-group-here
expect_grep "^gpushare-ctl: error: --admin-group: no group 'no-such-group-here'$" "$scratch/err"
expect_exit 2 gpushare-ctl serve --idle-grace soon
expect_grep "^gpushare-ctl: error: --idle-grace: duration 'soon' is not a number" "$scratch/err"
expect_grep "^Try 'gpushare-ctl --help' for more information\.$" "$scratch/err"
expect_exit 1 gpushare-ctl serve --log-file "$scratch/no/such/dir/log"
[ -e "$GPUSHARE_SOCKET" ] && fail "a failed serve left a socket"
true
