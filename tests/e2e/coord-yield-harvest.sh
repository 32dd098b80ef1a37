#!/usr/bin/env bash
# The yield signal on the simulated GPU: a production job (8 ms of kernel,
# 8 ms of host time per iteration) next to a saturating opportunistic job
# under the gpushare loop. Without the yield the loop keeps the
# opportunistic job near its floor (0.03-0.10 of its solo speed); following
# the production job's busy mark it runs in the production job's host gaps
# (0.34-0.45 of solo in bench/share) while production keeps its speed. The
# bounds (production >= 0.9 of solo, opportunistic >= 0.18 of solo) catch a
# yield that does not work (checked by turning it off: 0.10), not a slow
# machine.
. "$(dirname "$0")/common.inc"
. "$e2e_dir/coord.inc"
workload="$libexec/gpushare-workload"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
common=(--mem 16MiB --verify 1MiB)
prod=("${common[@]}" --kernels-per-iter 1 --kernel-us 8000 --host-us 8000)
opp=("${common[@]}" --kernels-per-iter 8 --kernel-us 2000)

start_coordinator
rate() { jq -r 'select(.kind == "workload-summary") | .iterations_per_s' "$1"; }
expect_exit 0 gpushare-run --sim --name solo -- "$workload" "${prod[@]}" --duration 1.5
prod_solo=$(rate "$scratch/out")
expect_exit 0 gpushare-run --sim --opportunistic --name solo -- "$workload" "${opp[@]}" --duration 1.5
opp_solo=$(rate "$scratch/out")

gpushare-run --sim --opportunistic --name opp -- "$workload" "${opp[@]}" --duration 7 \
  --per-iteration >"$scratch/opp.out" 2>"$scratch/opp.err" &
opp_pid=$!
wait_for "the opportunistic job to run" 5 grep -q '"iteration":2,' "$scratch/opp.out"
gpushare-run --sim --name prod -- "$workload" "${prod[@]}" --duration 5 --per-iteration \
  >"$scratch/prod.out" 2>"$scratch/prod.err" &
prod_pid=$!
wait "$prod_pid" || fail "the production job failed: $(cat "$scratch/prod.err")"
kill "$opp_pid" 2>/dev/null || true
wait "$opp_pid" 2>/dev/null || true

# Rates over the production job's run, after its first second (profile
# and slow start).
span() { jq -rs '[.[] | select(.kind == "workload-iteration")] | "\(.[0].t_ms + 1000) \(.[-1].t_ms)"' "$1"; }
read -r from to < <(span "$scratch/prod.out")
rate_between() {  # FILE
  jq -rs --argjson a "$from" --argjson b "$to" '[.[] | select(.kind == "workload-iteration"
    and .t_ms >= $a and .t_ms <= $b)] | length / (($b - $a) / 1000)' "$1"
}
prod_with=$(rate_between "$scratch/prod.out")
opp_with=$(rate_between "$scratch/opp.out")
echo "solo: prod $prod_solo opp $opp_solo; together: prod $prod_with opp $opp_with it/s" >&2
check() { awk "BEGIN { exit !($1) }" || fail "$2 (solo: prod $prod_solo opp $opp_solo; together: prod $prod_with opp $opp_with it/s)"; }
check "$prod_with >= 0.9 * $prod_solo" "production was not protected"
check "$opp_with >= 0.18 * $opp_solo" "the opportunistic job did not harvest production's gaps"
echo "coord-yield-harvest: ok"
