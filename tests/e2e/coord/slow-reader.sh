#!/usr/bin/env bash
# A control client that sends requests and never reads the replies does not
# hold the coordinator (gpushare-protocol(7)): once 256 KiB of replies wait
# for it, its further requests are not read, and when its replies have not
# moved for 10 s it is disconnected, with a line in the log. Meanwhile other
# clients are served. The disconnection cannot come before the 10 s have
# passed since the client started sending (a lower bound that load only
# lengthens); the upper bound is generous.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"
flood="$libexec/tests/gpushare-coord-flood"
[ -x "$flood" ] || fail "missing $flood (is the build staged?)"

start_coordinator
# Jobs with long names make each `ls` reply about 1.5 KiB.
for id in 1 2 3; do start_job "j$id" GPUSHARE_JOB="job-$id-$(printf 'x%.0s' {1..200})"; done

mkfifo "$scratch/flood.in"
start=$(now_ms)
"$flood" --socket "$GPUSHARE_SOCKET" unread 1 1000000 <"$scratch/flood.in" >"$scratch/flood.out" \
  2>"$scratch/flood.err" &
flood_pid=$!
exec {flood_fd}>"$scratch/flood.in"
# The flood returns from sending once the coordinator stops reading it.
wait_for "the flood to be held back" 30 grep -q '"kind":"flood-holding"' "$scratch/flood.out"
held_ms=$(( $(now_ms) - start ))
expect_exit 0 gpushare-ctl --timeout 5s ls
[ "$(jq -s length "$scratch/out")" -eq 3 ] || fail "another client's ls is incomplete"

wait_for "the unread connection to be closed" 40 \
  grep -q "has not read its replies for 10000 ms; closed" "$scratch/coordinator.log"
closed_ms=$(( $(now_ms) - start ))
[ "$closed_ms" -ge 10000 ] || fail "the reader was disconnected after ${closed_ms} ms, before 10 s"
exec {flood_fd}>&-
wait "$flood_pid" || fail "the flood failed: $(cat "$scratch/flood.err")"
report=$(tail -n1 "$scratch/flood.out")
jq -e '.opened == 1 and .closed_by_peer == 1 and .requests_sent < 1000000' <<<"$report" \
  >/dev/null || fail "the connection was not closed by the coordinator: $report"
expect_exit 0 gpushare-ctl ls
echo "coord-slow-reader: ok (held back after ${held_ms} ms; closed after ${closed_ms} ms; $report)"
