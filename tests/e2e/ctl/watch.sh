#!/usr/bin/env bash
# `watch` prints a sample record and the job records at each interval,
# until --count samples or until interrupted (status 0 either way).
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"

start_coordinator
start_job a GPUSHARE_JOB=a
start_job b GPUSHARE_JOB=b

start=$(now_ms)
expect_exit 0 gpushare-ctl watch --interval 100ms --count 3
elapsed=$(( $(now_ms) - start ))
[ "$elapsed" -ge 200 ] || fail "3 samples 100 ms apart took only ${elapsed} ms"
jq -se '[.[].kind] == ["sample","job","job","sample","job","job","sample","job","job"] and
        ([.[] | select(.kind == "sample") | .sample] == [1,2,3]) and
        all(.[] | select(.kind == "sample"); .jobs == 2 and .version == 1)' "$scratch/out" >/dev/null ||
  fail "unexpected watch output: $(cat "$scratch/out")"

# Interrupted by SIGINT or SIGTERM: status 0, and the samples it printed,
# each whole.
# (Each signal has its own files: a file the previous watch filled could
# satisfy the wait before this watch has even started.)
for signal in INT TERM; do
  stream="$scratch/stream-$signal" stream_err="$scratch/stream-$signal-err"
  gpushare-ctl watch --interval 50ms >"$stream" 2>"$stream_err" &
  watcher=$!
  wait_for "two samples" 5 sh -c "[ \$(grep -c '\"kind\":\"sample\"' '$stream') -ge 2 ]"
  kill -"$signal" "$watcher"
  status=0
  wait "$watcher" || status=$?
  [ "$status" -eq 0 ] || fail "a watch ended by SIG$signal exited $status: $(cat "$stream_err")"
  jq -se 'length >= 2' "$stream" >/dev/null || fail "SIG$signal: the output is not whole JSON"
  [ ! -s "$stream_err" ] || fail "SIG$signal: the watch wrote to stderr: $(cat "$stream_err")"
done

expect_exit 0 gpushare-ctl watch --interval 10ms --count 2 --format table
[ "$(grep -c '^ID ' "$scratch/out")" -eq 2 ] || fail "expected two table headers"

expect_exit 2 gpushare-ctl watch --interval 0s
expect_grep "^gpushare-ctl: error: --interval: must be above 0$" "$scratch/err"
[ ! -s "$scratch/out" ] || fail "a refused watch printed records"
expect_exit 2 gpushare-ctl watch --interval soon
expect_grep "^gpushare-ctl: error: --interval: duration 'soon' is not a number" "$scratch/err"

# The coordinator going away ends a watch with status 1.
gpushare-ctl watch --interval 20ms >/dev/null 2>"$scratch/watch-err" &
watcher=$!
wait_for "the watch to start" 5 sh -c "[ \$(gpushare-ctl ls | jq -s length) -eq 2 ]"
stop_coordinator
status=0
wait "$watcher" || status=$?
[ "$status" -eq 1 ] || fail "a watch whose coordinator stopped exited $status"
expect_grep "^gpushare-ctl: error: the coordinator on .* went away$" "$scratch/watch-err"
