#!/usr/bin/env bash
# A slow spill never makes the job stale: migrations of 128 MiB/s on the
# simulated GPU (1 GiB, eviction off) make the 512 MiB an opportunistic job
# spills for a production job take 4 s, twice the 2 s after which the
# coordinator calls a job whose telemetry stopped "stale". The job's
# memory work runs on its own thread, so its heartbeat goes on: sampled
# all along, show never says stale, says "spilling" with the 512 MiB under
# way at least once, and ends running with the 512 MiB host-resident. The
# fault it catches: a migration that holds back the client thread's
# heartbeat (the job turns stale after 2 s of the 4).
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"
export GPUSHARE_SIM_MEMORY=1GiB GPUSHARE_SIM_EVICT=off GPUSHARE_SIM_CTX_OVERHEAD=0
export GPUSHARE_SIM_MIGRATE_BANDWIDTH=128MiB
. "$e2e_dir/mem.inc"

start_coordinator
start_opp_768 wait:"$s/done" check:7
wait_for "its 768 MiB on the device in show" 5 sh -c \
  "gpushare-ctl show opp | jq -se '.[0] | .mem_device_resident_bytes == $((768 * MiB))'"

gpushare-run --sim --name prod -- "$c" init ctx alloc:plain:640MiB fill:5 check:5 \
  >"$s/prod.out" 2>"$s/prod.err" &
prod=$!
# Sample show until the spill has ended (bounded: 4 s expected, 30 allowed).
deadline=$(( $(now_ms) + 30000 ))
: >"$s/samples"
while :; do
  gpushare-ctl show opp >>"$s/samples" || fail "show failed while spilling"
  tail -n 1 "$s/samples" | jq -se ".[0] | .state == \"running\" and
    .mem_host_resident_bytes == $((512 * MiB))" >/dev/null && break
  [ "$(now_ms)" -lt "$deadline" ] || fail "the spill did not end in 30 s: $(tail -n 3 "$s/samples")"
done
wait "$prod" || fail "the production job failed: $(cat "$s/prod.out" "$s/prod.err")"
touch "$s/done"
wait "$opp" || fail "the opportunistic job failed: $(cat "$s/opp.out" "$s/opp.err")"

states=$(jq -r .state "$s/samples" | uniq | tr '\n' ' ')
echo "states while spilling: $states ($(wc -l <"$s/samples") samples)"
jq -se 'any(.[]; .state == "stale") | not' "$s/samples" >/dev/null ||
  fail "the job was shown stale during its spill: $states"
jq -se "any(.[]; .state == \"spilling\" and .mem_migrating_bytes == $((512 * MiB)))" \
  "$s/samples" >/dev/null || fail "the spill was never shown under way: $states"
