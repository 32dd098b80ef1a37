#!/usr/bin/env bash
# Several opportunistic jobs beside one production job (a sweep on a
# shared workstation): three ResNet-50 stand-ins (batch 128, back to back)
# started first, then production (ResNet-50 batch 32 with 25 ms of host
# time per step), on the simulated GPU under the gpushare loop. Each
# opportunistic job queues only its part of a production gap and of the
# room beside its busy mark (control_block.h, "Shares of a gap"), so three
# of them leave production no more queued than one would. At b6aeac0 each
# filled every gap on its own and production ran at 0.924 of solo with
# three (0.896 with three GPU-bound ones); now 0.98-1.0. And the gaps go to
# one job at a time, in turns of 100 ms (control_block.h, "Turns"): with
# parts of every gap, each context switched in paid a switch and a cold
# start, and the three together harvested 0.36 of one job's solo speed
# where one alone harvests 0.57; in turns 0.55-0.65, as one. Bounds:
# production >= 0.96 of solo, and the three together >= 0.45 of one job's
# solo speed (fails with parts of each gap: 0.36).
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
traces="$libexec/bench/traces"
[ -f "$traces/resnet50-32.csv" ] || skip "the kernel traces are not installed"
workload="$libexec/gpushare-workload"
common=(--mem 16MiB --verify 1MiB --launch-scale 0.4)
prod=("${common[@]}" --trace "$traces/resnet50-32.csv" --host-us 25000)
opp=("${common[@]}" --trace "$traces/resnet50-128.csv")
summary_rate() { jq -r 'select(.kind == "workload-summary") | .iterations_per_s' "$1"; }

start_coordinator
expect_exit 0 gpushare-run --sim --name solo -- "$workload" "${prod[@]}" --duration 3
prod_solo=$(summary_rate "$scratch/out")
expect_exit 0 gpushare-run --sim --opportunistic --name solo -- "$workload" "${opp[@]}" --duration 2
opp_solo=$(summary_rate "$scratch/out")

opp_pids=()
for k in 1 2 3; do
  gpushare-run --sim --opportunistic --name "opp$k" -- "$workload" "${opp[@]}" --duration 12 \
    --per-iteration >"$scratch/opp$k.out" 2>"$scratch/opp$k.err" &
  opp_pids+=($!)
done
for k in 1 2 3; do
  wait_for "opportunistic job $k to run" 10 grep -q '"iteration":1,' "$scratch/opp$k.out"
done
gpushare-run --sim --name prod -- "$workload" "${prod[@]}" --duration 7 --per-iteration \
  >"$scratch/prod.out" 2>"$scratch/prod.err" || fail "the production job failed: $(cat "$scratch/prod.err")"
kill "${opp_pids[@]}" 2>/dev/null || true
wait "${opp_pids[@]}" 2>/dev/null || true

# From 1.5 s after production's first step (its profile and slow start) to its last.
read -r from to < <(jq -rs '[.[] | select(.kind == "workload-iteration")]
  | "\(.[0].t_ms + 1500) \(.[-1].t_ms)"' "$scratch/prod.out")
rate_between() {  # FILE...
  cat "$@" | jq -rs --argjson a "$from" --argjson b "$to" '[.[] | select(.kind == "workload-iteration"
    and .t_ms >= $a and .t_ms <= $b)] | length / (($b - $a) / 1000)'
}
prod_with=$(rate_between "$scratch/prod.out")
opps_with=$(rate_between "$scratch"/opp[123].out)
figures="solo: prod $prod_solo opp $opp_solo; together: prod $prod_with, three opportunistic $opps_with it/s"
echo "$figures" >&2
check() { awk "BEGIN { exit !($1) }" || fail "$2 ($figures)"; }
check "$prod_with >= 0.96 * $prod_solo" "three opportunistic jobs slowed production"
check "$opps_with >= 0.45 * $opp_solo" "the three opportunistic jobs harvested less than one would"
echo "coord-yield-many-opp: ok"
