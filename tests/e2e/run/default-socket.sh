#!/usr/bin/env bash
# gpushare-run without GPUSHARE_SOCKET (gpushare-run(1), FILES): the socket
# is the per-user one under $XDG_RUNTIME_DIR; gpushare-run starts a
# coordinator there when none answers, uses the one that does, and passes
# the socket it chose to the job. A per-user directory that others may
# enter is refused: the job runs on its own limits, and nothing is started.
# A preset GPUSHARE_SOCKET wins.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"
[ -e /run/gpushare/gpushare.sock ] && skip "a node-wide coordinator socket exists on this machine"
unset GPUSHARE_SOCKET
socket="$XDG_RUNTIME_DIR/gpushare/gpushare.sock"
show_socket=(sh -c 'echo "$GPUSHARE_SOCKET"')

# None running: one is started on the per-user socket, and the job is told.
expect_exit 0 gpushare-run --sim "${show_socket[@]}"
[ "$(cat "$scratch/out")" = "$socket" ] || fail "the job was given '$(cat "$scratch/out")'"
[ -S "$socket" ] || fail "no coordinator socket at $socket"
[ "$(stat -c %a "$XDG_RUNTIME_DIR/gpushare")" = 700 ] || fail "the socket directory is not 0700"
started=$(pgrep -f -- "--socket $socket serve")
[ -n "$started" ] || fail "no coordinator serves $socket"

# One running: used, not started again; the job registers with it.
start_held j -- gpushare-run --sim --name by-default --mem-limit 1GiB "$gs_client" alloc 1MiB hold
# (show_has asks the default socket, $socket: GPUSHARE_SOCKET is unset.)
wait_for "the job to register" 10 show_has by-default '.mem_limit_bytes == 1073741824'
[ "$(pgrep -f -c -- "--socket $socket serve")" = 1 ] || fail "a second coordinator was started"
release j
wait "${job_pid[j]}" || fail "the job failed: $(cat "$scratch/job-j.err")"
kill "$started"
wait_for "the coordinator to stop" 10 sh -c "! kill -0 $started"

# A per-user directory that others may enter is not trusted.
chmod 0755 "$XDG_RUNTIME_DIR/gpushare"
expect_exit 0 gpushare-run --sim "$gs_client" alloc 1MiB
expect_grep "^gpushare-run: warning: refusing the coordinator socket $socket: .*the job enforces its own limits only$" \
  "$scratch/err"
expect_grep '^alloc bytes=1048576 result=0$' "$scratch/out"
[ ! -e "$socket" ] || fail "a coordinator was started in an untrusted directory"
chmod 0700 "$XDG_RUNTIME_DIR/gpushare"

# A preset socket is used as given.
GPUSHARE_SOCKET="$scratch/preset.sock" expect_exit 0 gpushare-run --sim "${show_socket[@]}"
[ "$(cat "$scratch/out")" = "$scratch/preset.sock" ] || fail "the preset socket was not kept"
[ -S "$scratch/preset.sock" ] || fail "no coordinator on the preset socket"
[ ! -e "$socket" ] || fail "the per-user socket was used although one was preset"
