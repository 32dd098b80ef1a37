#!/usr/bin/env bash
# A job launched by gpushare-run is never silently without its coordinator.
#  1. The per-user coordinator gpushare-run starts exits after its idle
#     grace (2 s here) when no job registered; a job registers only when it
#     first touches CUDA. A job that first loads for 4 s (`sleep 4`, the
#     workload's behaviour) must still find the coordinator, and be listed
#     by gpushare-ctl ls: the coordinator stays while a job launched for it
#     lives. After the job ends, it still exits by itself.
#  2. A job pointed at a coordinator that is not there says so once on
#     stderr, naming what its class goes without.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"
w="$libexec/gpushare-workload"
s=$scratch

# 1.
GPUSHARE_COORDINATOR_IDLE_GRACE=2s gpushare-run --sim --opportunistic --name late -- \
  bash -c 'sleep 4; exec "$1" --mem 64MiB --kernel-us 200 --duration 60 --stop-file "$2"' \
  bash "$w" "$s/stop" >"$s/late.out" 2>"$s/late.err" &
job=$!
wait_for "the late job listed by its coordinator" 20 sh -c \
  'gpushare-ctl ls 2>/dev/null | grep -q "\"name\":\"late\""'
coordinator_pid=$(pgrep -f -- "--socket $GPUSHARE_SOCKET serve" | head -n1)
[ -n "$coordinator_pid" ] || fail "no coordinator process"
touch "$s/stop"
wait "$job" || fail "the late job failed: $(cat "$s/late.err")"
grep -q "no coordinator answers" "$s/late.err" && fail "the late job ran without its coordinator"
timeout 15 tail --pid="$coordinator_pid" -f /dev/null ||
  fail "the coordinator did not exit after the launched job ended"

# 2. Nobody at the socket: one warning per class, once however many calls.
for class in opportunistic production; do
  client GPUSHARE_SOCKET="$s/nobody.sock" GPUSHARE_LAUNCHED_FOR="$s/nobody.sock" \
    GPUSHARE_QOS=$class -- \
    "$gs_client" alloc 1MiB alloc 1MiB contexts 1
  expect_grep "^alloc bytes=1048576 result=0$" "$scratch/out"
  [ "$(grep -c 'no coordinator answers' "$scratch/err")" -eq 1 ] ||
    fail "$class: not one warning: $(cat "$scratch/err")"
  expect_grep "gpushare\[[0-9]*\]: warning: no coordinator answers at $s/nobody.sock: this $class job" \
    "$scratch/err"
done
expect_grep "production job is not protected" "$scratch/err"
# Started with no coordinator on purpose: nothing to say.
gpushare-run --sim --no-coordinator -- "$gs_client" alloc 1MiB >"$s/quiet.out" 2>"$s/quiet.err"
grep -q "no coordinator answers" "$s/quiet.err" && fail "--no-coordinator: $(cat "$s/quiet.err")"
echo "run-coordinator-late-job: ok"
