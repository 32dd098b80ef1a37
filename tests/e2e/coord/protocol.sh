#!/usr/bin/env bash
# Malformed, oversized and out-of-order messages each get an error reply and
# the connection closed, while the coordinator goes on serving everyone
# else: a registered job stays registered and keeps its limits, and `ls`
# still answers.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"

start_coordinator
start_job bystander GPUSHARE_JOB=bystander GPUSHARE_MEM_LIMIT=2GiB

# send NAME: pipes stdin to the coordinator; the reply is in $scratch/NAME,
# and the coordinator must have closed the connection (status 0, not 3).
send() {
  local status=0
  "$raw_client" --timeout-ms 3000 >"$scratch/$1" || status=$?
  [ "$status" -eq 0 ] || fail "$1: the coordinator kept the connection open (status $status)"
}
error_reply() {  # NAME PATTERN
  jq -e --arg re "$2" '.kind == "error" and .version == 1 and .reason == "bad-request" and (.message | test($re))' \
    "$scratch/$1" >/dev/null || { cat "$scratch/$1"; fail "$1: no error reply matching /$2/"; }
}

echo '{"kind":"list",' | send truncated
error_reply truncated "^malformed JSON: "

printf 'not json at all\n' | send garbage
error_reply garbage "^malformed JSON: "

echo '{"kind":"list","version":7}' | send version
error_reply version "^unsupported version 7 of message 'list'$"

echo '{"kind":"shutdown","version":1}' | send unknown
error_reply unknown "^unknown message kind 'shutdown'$"

echo '{"kind":"register","version":1,"name":"x","qos":"production","devices":[{"uuid":"GPU-1","mem_total_bytes":-5}]}' |
  send negative
error_reply negative "must not be negative"

# 100 KiB without a newline: refused once 16 KiB have arrived.
head -c 102400 /dev/zero | tr '\0' ' ' | send oversized
error_reply oversized "^message longer than 16384 bytes$"

# Out of order: a register after a request, and two registers in a row.
printf '%s\n' '{"kind":"list","version":1}' \
  '{"kind":"register","version":1,"name":"late","qos":"production","devices":[]}' | send late
[ "$(jq -s length "$scratch/late")" -eq 2 ] || fail "late: expected the list reply, then an error"
jq -se '.[0].kind == "records" and .[1].kind == "error" and (.[1].message | test("out of order"))' \
  "$scratch/late" >/dev/null || fail "late: $(cat "$scratch/late")"
printf '%s\n' '{"kind":"register","version":1,"name":"twice","qos":"production","devices":[]}' \
  '{"kind":"register","version":1,"name":"twice","qos":"production","devices":[]}' | send twice
jq -se '.[0].kind == "registered" and .[1].kind == "error" and (.[1].message | test("out of order"))' \
  "$scratch/twice" >/dev/null || fail "twice: $(cat "$scratch/twice")"
# A registered job that sends anything but 'room' (which gets no answer)
# is cut off, and forgotten; 'room' from anyone else is out of order.
printf '%s\n' '{"kind":"register","version":1,"name":"chatty","qos":"production","devices":[]}' \
  '{"kind":"room","version":1}' '{"kind":"room","version":1}' '{"kind":"list","version":1}' |
  send chatty
jq -se 'length == 2 and .[1].kind == "error" and
  (.[1].message | test("registered job sends only .room."))' \
  "$scratch/chatty" >/dev/null || fail "chatty: $(cat "$scratch/chatty")"
# A flood of 'room' (20000 lines) is read through within the client's 3 s:
# the job is not cut off until its 'list'.
{
  echo '{"kind":"register","version":1,"name":"flood","qos":"production","devices":[]}'
  for _ in $(seq 20000); do echo '{"kind":"room","version":1}'; done
  echo '{"kind":"list","version":1}'
} | send flood
jq -se 'length == 2 and .[0].kind == "registered" and .[1].kind == "error"' \
  "$scratch/flood" >/dev/null || fail "flood: $(cat "$scratch/flood")"
echo '{"kind":"room","version":1}' | send roomless
jq -se '.[0].kind == "error" and (.[0].message | test("out of order"))' \
  "$scratch/roomless" >/dev/null || fail "roomless: $(cat "$scratch/roomless")"

# Well-formed requests with bad content are answered, and the connection stays.
status=0
echo '{"kind":"show","version":1,"job":"nobody"}' | "$raw_client" --timeout-ms 300 >"$scratch/polite" ||
  status=$?
[ "$status" -eq 3 ] || fail "an unknown job closed the connection (status $status)"
jq -e '.kind == "error" and .reason == "unknown-job"' "$scratch/polite" >/dev/null ||
  fail "polite: $(cat "$scratch/polite")"

# Everyone else was served all along.
kill -0 "$coordinator_pid" || fail "the coordinator died"
expect_exit 0 gpushare-ctl ls
jq -se 'map(.name) == ["bystander"]' "$scratch/out" >/dev/null ||
  fail "expected only the bystander to be registered: $(cat "$scratch/out")"
job_say bystander status | jq -e '.registered and .registrations == 1 and .mem_limit_bytes == 2147483648' \
  >/dev/null || fail "the bystander lost its registration"
expect_grep "message longer than 16384 bytes; closed" "$scratch/coordinator.log"
