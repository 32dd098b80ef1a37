#!/usr/bin/env bash
# gpushare-run starts a per-user coordinator when none is running (detached,
# logging beside its socket, exiting after its last job), the job registers
# with it, and --no-coordinator starts none.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
export GPUSHARE_COORDINATOR_IDLE_GRACE=1s

# --no-coordinator: the job runs, and nothing listens afterwards.
gpushare-run --no-coordinator --sim "$gs_client" alloc 1MiB >"$scratch/out"
expect_grep '^alloc bytes=1048576 result=0$' "$scratch/out"
if [ -e "$GPUSHARE_SOCKET" ]; then fail "--no-coordinator started a coordinator"; fi

# A job started with gpushare-run finds a coordinator started for it.
mkfifo "$scratch/fifo"
gpushare-run --sim --name auto-started --mem-limit 1GiB "$gs_client" alloc 64MiB hold \
  <"$scratch/fifo" >"$scratch/job.out" 2>"$scratch/job.err" &
job=$!
exec 3>"$scratch/fifo"
for _ in $(seq 200); do grep -q '^hold ready' "$scratch/job.out" && break; sleep 0.05; done
grep -q '^hold ready' "$scratch/job.out" || fail "the job did not start: $(cat "$scratch/job.err")"
[ -S "$GPUSHARE_SOCKET" ] || fail "no coordinator socket at $GPUSHARE_SOCKET"
[ -f "$scratch/coordinator.log" ] || fail "the coordinator's log is not beside its socket"
# Registration happens at CUDA initialisation; wait for it (bounded).
for _ in $(seq 100); do
  gpushare-ctl ls >"$scratch/ls" 2>/dev/null && grep -q '"name":"auto-started"' "$scratch/ls" && break
  sleep 0.05
done
expect_grep '"name":"auto-started"' "$scratch/ls"
expect_grep '"mem_limit_bytes":1073741824' "$scratch/ls"
coordinator_pid=$(pgrep -f -- "--socket $GPUSHARE_SOCKET serve" | head -n1)
[ -n "$coordinator_pid" ] || fail "no coordinator process"
[ "$(ps -o sid= -p "$coordinator_pid" | tr -d ' ')" = "$coordinator_pid" ] ||
  fail "the coordinator is not detached in its own session"

# A second job uses the same coordinator.
gpushare-run --sim "$gs_client" alloc 1MiB >"$scratch/second.out"
[ "$(pgrep -f -c -- "--socket $GPUSHARE_SOCKET serve")" = 1 ] || fail "a second coordinator was started"

# The last job leaves; the coordinator exits by itself after its grace period.
exec 3>&-
wait "$job"
for _ in $(seq 100); do kill -0 "$coordinator_pid" 2>/dev/null || break; sleep 0.05; done
if kill -0 "$coordinator_pid" 2>/dev/null; then fail "the coordinator did not exit when idle"; fi
