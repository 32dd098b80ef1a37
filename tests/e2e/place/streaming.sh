#!/usr/bin/env bash
# In a pipeline, each placement is printed before gpushare-place waits for
# the next job: a consumer can feed jobs one at a time and read each answer.
. "$(dirname "$0")/../common.inc"
data="$GPUSHARE_SOURCE_DIR/tests/data/place"

coproc PLACE { gpushare-place -c "$data/cluster.toml"; }
# bash unsets PLACE_PID once the coprocess is reaped: keep our own copy.
place_pid=$PLACE_PID
for id in a b c; do
  echo "{\"id\":\"$id\",\"tenant\":\"research\",\"class\":\"opportunistic\"}" >&"${PLACE[1]}"
  # Bounded wait for this job's answer; the next job is not sent before it.
  read -r -t 20 answer <&"${PLACE[0]}" || fail "no placement for job $id within 20 s"
  [ "$(jq -r .job <<<"$answer")" = "$id" ] || fail "answer for $id: $answer"
  [ "$(jq -r .status <<<"$answer")" = placed ] || fail "job $id not placed: $answer"
done
exec {PLACE[1]}>&-
status=0
wait "$place_pid" || status=$?
[ "$status" -eq 0 ] || fail "gpushare-place exited $status"
