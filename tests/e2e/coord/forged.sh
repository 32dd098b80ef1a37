#!/usr/bin/env bash
# Plays a co-tenant who lies to the coordinator in registrations and
# telemetry, and races root for ids and names:
#  - device totals of 10^15 bytes and a phantom device must not show in
#    `node` beyond what real jobs report, and nothing stays after the liar
#    leaves;
#  - telemetry of 2^63 bytes from two jobs must not wrap the node's totals;
#  - a job name copied from root's job must not make root's `set NAME`
#    ambiguous;
#  - after a coordinator restart, an id hint naming root's job id must not
#    give the attacker that id (root's `pause ID` would pause the attacker);
#    root's job gets its id back.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"

[ "$(id -u)" -eq 0 ] || skip "needs root to play another user"
command -v setpriv >/dev/null || skip "needs setpriv (util-linux)"
attacker=$((20000 + RANDOM % 10000))
as_attacker=(setpriv --reuid="$attacker" --regid="$attacker" --clear-groups)
chmod 0711 "$scratch"
real_uuid=000102030405060708090a0b0c0d0e0f
real_device=GPU-00010203-0405-0607-0809-0a0b0c0d0e0f
sixteen_gib=17179869184

start_coordinator
start_job root GPUSHARE_JOB=train GPUSHARE_MEM_LIMIT=8GiB

# 1. Forged totals and a phantom device.
run_as=("${as_attacker[@]}")
start_job liar GPUSHARE_JOB=train -- --uuid "$real_uuid" --mem-total 1000000GiB
start_job phantom GPUSHARE_JOB=phantom -- --uuid ffffffffffffffffffffffffffffffff --mem-total 1000000GiB
run_as=()
job_say liar wait-registered 1 >/dev/null
job_say phantom wait-registered 1 >/dev/null
gpushare-ctl node >"$scratch/node"
jq -se --arg uuid "$real_device" --argjson total "$sixteen_gib" \
  'map(select(.kind == "device" and .uuid == $uuid)) | .[0].mem_total_bytes == $total' \
  "$scratch/node" >/dev/null || { cat "$scratch/node"; fail "a forged total raised the real device's size"; }

# 2. Telemetry that would wrap: 2^63 bytes from each of two jobs on one device.
job_say liar alloc 9223372036854775808 | jq -e '.ok == true' >/dev/null || fail "the liar could not claim 8 EiB"
start_job liar2 GPUSHARE_JOB=liar2 -- --uuid "$real_uuid"
job_say liar2 alloc 9223372036854775808 >/dev/null
# Both jobs' telemetry reaches the coordinator within 50 ms each: wait for
# the saturated total itself (a wrapped one would be 0 and never arrive).
saturated() {
  gpushare-ctl node |
    jq -se 'map(select(.kind == "node")) | .[0].mem_used_bytes == 18446744073709551615' >/dev/null
}
deadline=$(( $(now_ms) + 5000 ))
until saturated; do
  [ "$(now_ms)" -lt "$deadline" ] ||
    { gpushare-ctl node; fail "the node's used total wrapped instead of saturating"; }
  sleep 0.01
done
end_job liar2

# 3. A copied name: root's `set train` acts on root's own job.
expect_exit 0 gpushare-ctl set train --mem-limit 6GiB
jq -e '.uid == 0 and .mem_limit_bytes == 6442450944' "$scratch/out" >/dev/null ||
  fail "root's set by name did not reach root's job: $(cat "$scratch/out" "$scratch/err")"

# The phantom leaves: its device goes with it.
end_job phantom
end_job liar
wait_for "the phantom device to be forgotten" 5 sh -c \
  "[ \$(gpushare-ctl node | jq -s 'map(select(.kind == \"device\")) | length') -eq 1 ]"

# 4. Restart, and race root's job for its id while it is stopped.
root_id=$(gpushare-ctl show train | jq .id)
stop_coordinator KILL
kill -STOP "${job_pid[root]}"
start_coordinator
register='{"kind":"register","version":1,"protocol":1,"layout_version":10,"name":"train","qos":"production","id_hint":'"$root_id"',"devices":[{"uuid":"'"$real_device"'","mem_total_bytes":'"$sixteen_gib"',"requested_limit_bytes":null,"mem_limit_bytes":null}]}'
echo "$register" | "${as_attacker[@]}" "$libexec/tests/gpushare-coord-raw" --timeout-ms 30000 \
  >"$scratch/raw.out" 2>&1 &
raw_pid=$!
wait_for "the attacker's registration" 5 grep -q '"kind"' "$scratch/raw.out"
grep -q '"kind":"registered"' "$scratch/raw.out" || fail "the raw registration failed: $(cat "$scratch/raw.out")"
stolen=$(jq -r 'select(.kind == "registered") | .id' "$scratch/raw.out")
[ "$stolen" != "$root_id" ] || fail "the attacker took root's job id $root_id after the restart"
kill -CONT "${job_pid[root]}"
wait_for "root's job to register again" 5 sh -c \
  "gpushare-ctl ls | jq -se 'any(.[]; .uid == 0 and .id == $root_id)' >/dev/null"
expect_exit 0 gpushare-ctl pause "$root_id"
jq -e '.uid == 0' "$scratch/out" >/dev/null || fail "root's pause $root_id reached uid $(jq .uid "$scratch/out")"
kill "$raw_pid" 2>/dev/null || true
echo "coord-forged: ok"
