#!/usr/bin/env bash
# The yield on a real framework step: a production ResNet-50 batch-32 step
# timeline (825 kernels of a few microseconds, 25 ms of host time per step)
# next to an opportunistic batch-128 one back to back, under the gpushare
# loop. With one launch in flight and a wake-up per launch the
# opportunistic job got 0.06-0.09 of its solo speed here (bench/share,
# results.md); with GPU-time grants (bursts sized to production's gap, a
# small grant beside it while it is busy) about 0.5, production at 0.98.
# The bounds (production >= 0.9 of solo, opportunistic >= 0.3 of solo,
# rates counted inside the production job's window) catch the serialised
# launch path (0.06; bursts of one launch in flight: 0.21), not a slow
# machine (0.46-0.53 on the loaded 2-core machine).
. "$(dirname "$0")/common.inc"
. "$e2e_dir/coord.inc"
workload="$libexec/gpushare-workload"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
traces="$libexec/bench/traces"
common=(--mem 16MiB --verify 1MiB --launch-scale 0.4)
prod=("${common[@]}" --trace "$traces/resnet50-32.csv" --host-us 25000)
opp=("${common[@]}" --trace "$traces/resnet50-128.csv")

start_coordinator
rate() { jq -r 'select(.kind == "workload-summary") | .iterations_per_s' "$1"; }
expect_exit 0 gpushare-run --sim --name solo -- "$workload" "${prod[@]}" --duration 2
prod_solo=$(rate "$scratch/out")
expect_exit 0 gpushare-run --sim --opportunistic --name solo -- "$workload" "${opp[@]}" --duration 2
opp_solo=$(rate "$scratch/out")

gpushare-run --sim --opportunistic --name opp -- "$workload" "${opp[@]}" --duration 9 \
  --per-iteration >"$scratch/opp.out" 2>"$scratch/opp.err" &
opp_pid=$!
wait_for "the opportunistic job to run" 5 grep -q '"iteration":2,' "$scratch/opp.out"
gpushare-run --sim --name prod -- "$workload" "${prod[@]}" --duration 6 --per-iteration \
  >"$scratch/prod.out" 2>"$scratch/prod.err" &
prod_pid=$!
wait "$prod_pid" || fail "the production job failed: $(cat "$scratch/prod.err")"
kill "$opp_pid" 2>/dev/null || true
wait "$opp_pid" 2>/dev/null || true

# Rates inside the production job's window, after its first 1.5 s
# (profile and slow start).
span() { jq -rs '[.[] | select(.kind == "workload-iteration")] | "\(.[0].t_ms + 1500) \(.[-1].t_ms)"' "$1"; }
read -r from to < <(span "$scratch/prod.out")
rate_between() {  # FILE
  jq -rs --argjson a "$from" --argjson b "$to" '[.[] | select(.kind == "workload-iteration"
    and .t_ms >= $a and .t_ms <= $b)] | length / (($b - $a) / 1000)' "$1"
}
prod_with=$(rate_between "$scratch/prod.out")
opp_with=$(rate_between "$scratch/opp.out")
summary="solo: prod $prod_solo opp $opp_solo; together: prod $prod_with opp $opp_with steps/s"
echo "$summary" >&2
check() { awk "BEGIN { exit !($1) }" || fail "$2 ($summary)"; }
check "$prod_with >= 0.9 * $prod_solo" "production was not protected"
check "$opp_with >= 0.3 * $opp_solo" "the opportunistic job's short kernels were serialised"
echo "coord-yield-trace: ok"
