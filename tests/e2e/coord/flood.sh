#!/usr/bin/env bash
# Plays a co-tenant who floods the coordinator, three ways:
#  1. the coordinator is stopped (SIGSTOP) and its listen backlog is full:
#     gpushare-ctl must give up within --timeout with a clear error, not
#     hang in connect();
#  2. the coordinator has run out of file descriptors: it must refuse the
#     excess without spinning on accept() or flooding its log, and serve
#     again once connections close;
#  3. another user sends `ls` requests on many connections and never reads
#     the replies: the coordinator stops reading them (backpressure), its
#     memory stays bounded, and root's `ls` is answered at once.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"

flood="$libexec/tests/gpushare-coord-flood"
[ -x "$flood" ] || fail "missing $flood"
command -v prlimit >/dev/null || skip "needs prlimit (util-linux)"

# cpu_ticks PID: user + system clock ticks the process has used.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }

# start_flood NAME ARGS...: the flood in the background, holding its
# connections until flood_end NAME; returns once it holds them.
declare -A flood_fd flood_pid
start_flood() {
  local name=$1; shift
  mkfifo "$scratch/flood-$name.in"
  ("${run_as[@]}" "$flood" "$@") <"$scratch/flood-$name.in" >"$scratch/flood-$name.out" \
    2>"$scratch/flood-$name.err" &
  flood_pid[$name]=$!
  local fd
  exec {fd}>"$scratch/flood-$name.in"
  flood_fd[$name]=$fd
  wait_for "the $name flood to hold its connections" 30 grep -q flood-holding "$scratch/flood-$name.out"
}
# flood_end NAME: ends the flood; its report is then the last line of
# $scratch/flood-NAME.out (flood_report NAME).
flood_end() {
  local fd=${flood_fd[$1]}
  eval "exec $fd>&-"
  wait "${flood_pid[$1]}" || true
}
flood_report() { tail -n1 "$scratch/flood-$1.out"; }

# 1. Stopped coordinator, full backlog.
start_coordinator
kill -STOP "$coordinator_pid"
start_flood backlog --socket "$GPUSHARE_SOCKET" connections 2000
jq -e '.opened > 0' <(tail -n1 "$scratch/flood-backlog.out") >/dev/null || fail "the flood opened nothing"
start=$(now_ms)
expect_exit 1 timeout 20 gpushare-ctl --timeout 1s ls
elapsed=$(( $(now_ms) - start ))
expect_grep "^gpushare-ctl: error: the coordinator on $GPUSHARE_SOCKET (accepts no connections \(busy or stopped\)|did not answer in time)" \
  "$scratch/err"
[ "$elapsed" -lt 5000 ] || fail "gpushare-ctl --timeout 1s took ${elapsed} ms against a stopped coordinator"
flood_end backlog
flood_report backlog | jq -e '.backlog_full == true' >/dev/null ||
  fail "the backlog never filled: the case was not exercised ($(flood_report backlog))"
kill -CONT "$coordinator_pid"
expect_exit 0 gpushare-ctl ls

# 2. Out of descriptors: lower the running coordinator's limit below what
# the flood takes (root is not held to any per-user share).
prlimit --pid "$coordinator_pid" --nofile=48:48
before_ticks=$(cpu_ticks "$coordinator_pid")
before_log=$(wc -c <"$scratch/coordinator.log")
start_flood descriptors --socket "$GPUSHARE_SOCKET" connections 200
# Held for a while: a coordinator spinning on EMFILE burns its core now.
# Hold while 100 requests from root are refused or answered, one by one.
for _ in $(seq 100); do gpushare-ctl --timeout 2s ls >/dev/null 2>&1 || true; done
ticks=$(( $(cpu_ticks "$coordinator_pid") - before_ticks ))
log_bytes=$(( $(wc -c <"$scratch/coordinator.log") - before_log ))
flood_end descriptors
report=$(flood_report descriptors)
[ "$ticks" -lt 100 ] ||
  fail "the coordinator used $ticks clock ticks while out of descriptors (spinning on accept?)"
[ "$log_bytes" -lt 16384 ] || fail "the coordinator logged $log_bytes bytes while out of descriptors"
grep -q "out of file descriptors: refusing connections until some close" "$scratch/coordinator.log" ||
  fail "the coordinator never said it ran out of descriptors: the case was not exercised"
echo "$report" | jq -e '.opened > 0' >/dev/null || fail "flood: $report"
# Descriptors are back: served again.
wait_for "the coordinator to serve again" 5 gpushare-ctl --timeout 1s ls
stop_coordinator

# 3. Unread replies from another user, with jobs listed so replies are big.
[ "$(id -u)" -eq 0 ] || { echo "coord-flood: ok (unread-replies case needs root: skipped)"; exit 0; }
command -v setpriv >/dev/null || { echo "coord-flood: ok (no setpriv: unread case skipped)"; exit 0; }
chmod 0711 "$scratch"
start_coordinator
for id in 1 2 3; do start_job "j$id" GPUSHARE_JOB="job-with-a-long-name-$id-$(printf 'x%.0s' {1..100})"; done
attacker=$((20000 + RANDOM % 10000))
run_as=(setpriv --reuid="$attacker" --regid="$attacker" --clear-groups)
start_flood unread --socket "$GPUSHARE_SOCKET" unread 10 100000
run_as=()
rss=$(rss_kib "$coordinator_pid")
start=$(now_ms)
expect_exit 0 gpushare-ctl --timeout 5s ls
elapsed=$(( $(now_ms) - start ))
[ "$(jq -s length "$scratch/out")" -eq 3 ] || fail "root's ls is incomplete"
flood_end unread
report=$(flood_report unread)
[ "$rss" -lt 65536 ] || fail "the coordinator holds $rss KiB with unread replies queued ($report)"
[ "$elapsed" -lt 2000 ] || fail "root's ls took ${elapsed} ms during the flood"
echo "$report" | jq -e '.opened == 10 and .requests_sent > 0' >/dev/null || fail "flood: $report"
echo "coord-flood: ok (unread flood: $report; coordinator RSS ${rss} KiB; root's ls ${elapsed} ms)"
