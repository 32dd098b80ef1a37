#!/usr/bin/env bash
# The coordinator pauses an opportunistic job whose memory is mostly on
# the host while production runs (memory/host_pause.h), on the simulated
# GPU (1 GiB, eviction off): the opportunistic job holds 768 MiB in three
# allocations and computes on them; a production job allocating 640 MiB
# makes it spill two of them (2/3 on the host). Its launches then stop
# while production runs ("paused (memory)" in ls), and go again once
# production has left; an operator's pause taken meanwhile survives the
# automatic resume, and an operator's resume does not lift the automatic
# pause.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"
. "$e2e_dir/mem.inc"
export GPUSHARE_SIM_MEMORY=1GiB GPUSHARE_SIM_EVICT=off GPUSHARE_SIM_CTX_OVERHEAD=0
w="$libexec/gpushare-workload"
show() { gpushare-ctl show "$1" | jq -r "$2"; }
launches() { show "$1" .launches; }
# advanced JOB FROM BY: JOB's launch count reached FROM + BY.
advanced() { [ "$(launches "$1")" -ge $(($2 + $3)) ]; }
reasons_are() { show_has opp '.pause_reasons == $r' --argjson r "$1"; }
state_is() { show_has opp '.state == $s' --arg s "$1"; }

start_coordinator
gpushare-run --sim --opportunistic --name opp -- "$w" --duration 300 --mem 768MiB --chunks 3 --verify 16MiB \
  --kernels-per-iter 2 --kernel-us 1000 --stop-file "$s/opp-stop" >"$s/opp.out" 2>"$s/opp.err" &
opp=$!
wait_for "the opportunistic job's launches" 20 advanced opp 0 20
show opp .pause_reasons | grep -qx null || fail "a running job with pause reasons: $(gpushare-ctl show opp)"

start_production() {  # NAME
  gpushare-run --sim --name "$1" -- "$w" --duration 300 --mem 640MiB --kernel-us 1000 --host-us 1000 \
    --stop-file "$s/$1-stop" >"$s/$1.out" 2>"$s/$1.err" &
  prod=$!
}
stop_production() {  # NAME
  touch "$s/$1-stop"
  wait "$prod" || fail "the production job $1 failed: $(cat "$s/$1.err")"
}

# 1. Paused while production runs on the device it spilled for.
start_production prod1
wait_for "the spill" 20 show_has opp ".mem_host_resident_bytes >= $((512 * MiB))"
wait_for "the coordinator's pause" 10 reasons_are '["memory"]'
state_is paused || fail "not paused: $(gpushare-ctl show opp)"
expect_exit 0 gpushare-ctl ls --format table
expect_grep "^[0-9]+ +opp +.* paused \(memory\)$" "$scratch/out"
expect_exit 0 gpushare-ctl metrics
expect_grep '^gpushare_job_paused\{.*job_name="opp".*reason="memory"\} 1$' "$scratch/out"
# Its launches stop: none while production makes 100 more (at least 100 ms
# of simulated kernels; the first 50 let the job's last count arrive).
wait_for "production's launches" 20 advanced prod1 "$(launches prod1)" 50
held=$(launches opp)
wait_for "production's launches" 20 advanced prod1 "$(launches prod1)" 100
[ "$(launches opp)" -le $((held + 1)) ] ||
  fail "a job paused for its memory launched: $held then $(launches opp)"
# An operator's resume does not lift it, and says why.
expect_exit 0 gpushare-ctl resume opp
expect_grep '"note":"paused by the coordinator while its memory is on the host' "$scratch/out"
reasons_are '["memory"]' || fail "an operator's resume lifted the automatic pause"

# 2. Production leaves: the job runs again on its own, its memory back.
stop_production prod1
wait_for "the automatic resume" 10 state_is running
held=$(launches opp)
wait_for "launches after the resume" 20 advanced opp "$held" 10
wait_for "its memory back" 20 show_has opp ".mem_host_resident_bytes == 0"

# 3. An operator's pause taken while the automatic one holds survives the
# automatic resume.
start_production prod2
wait_for "the second spill" 20 show_has opp ".mem_host_resident_bytes >= $((512 * MiB))"
wait_for "the coordinator's second pause" 10 reasons_are '["memory"]'
expect_exit 0 gpushare-ctl pause opp
reasons_are '["operator","memory"]' || fail "both reasons: $(gpushare-ctl show opp)"
stop_production prod2
wait_for "the automatic pause lifted" 10 reasons_are '["operator"]'
state_is paused || fail "the automatic resume undid the operator's pause: $(gpushare-ctl show opp)"
expect_exit 0 gpushare-ctl ls --format table
expect_grep "^[0-9]+ +opp +.* paused$" "$scratch/out"
expect_exit 0 gpushare-ctl resume opp
wait_for "the operator's resume" 10 state_is running
held=$(launches opp)
wait_for "launches after the operator's resume" 20 advanced opp "$held" 10

touch "$s/opp-stop"
wait "$opp" || fail "the opportunistic job failed: $(cat "$s/opp.err")"
grep -q '"kind":"workload-summary"' "$s/opp.out" || fail "no summary: $(cat "$s/opp.out")"
echo "paused while production ran, resumed on its own; the operator's pause kept"
