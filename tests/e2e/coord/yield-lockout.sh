#!/usr/bin/env bash
# An opportunistic job that pauses on its host in the middle of a burst is
# not locked out. Its step is 40 kernels of 1400 us launched 10 us apart,
# with a 1-s pause after the tenth and no synchronisation inside the step
# (as a PyTorch job pauses for cuDNN autotuning or lazy module loading, or
# wherever Python is slower than the GPU); beside it a production job of
# ten 1400-us kernels and 15 ms of host time per step, started 2 s earlier.
# Alone the step takes about 1.06 s. When the cost per launch was learned
# between two markers that spanned the pause, the job learned ~0.1 s per
# launch, then no launch fitted a production gap, so nothing finished to
# teach it otherwise: ~1 step in 8 s where the same pair without gpushare
# does ~7. The bounds: the opportunistic job does at least half the steps
# it does in the same pair without gpushare (the lockout: 0.1-0.2), and
# production keeps 0.9 of the rate it had alone before the job came.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
workload="$libexec/gpushare-workload"

# The opportunistic step: a kernel-traces CSV (tests/data/kernel-traces),
# one step (no syncs file), the pause in the launch offsets.
{
  echo "launch_us,start_us,kernel_us,stream,kernel"
  for i in $(seq 0 39); do
    at=$((i * 10))
    [ "$i" -ge 10 ] && at=$((at + 1000000))
    echo "$at,$at,1400,7,gpushare_spin"
  done
} >"$scratch/pause.csv"
common=(--mem 16MiB --verify 1MiB --per-iteration)
prod=("${common[@]}" --kernels-per-iter 10 --kernel-us 1400 --host-us 15000 --duration 12)
opp=("${common[@]}" --trace "$scratch/pause.csv" --duration 8)

iterations() { grep -c '"kind":"workload-iteration"' "$1" || true; }
past_60() { [ "$(iterations "$1")" -ge 60 ]; }

# pair NAME PROD_RUNNER... -- OPP_RUNNER...: production first, the
# opportunistic job once production has done 60 steps (about 2 s). Sets
# opp_steps (opportunistic steps ended within 8 s of its start),
# prod_alone and prod_with (production's steps/s before and after it came).
pair() {
  local name=$1; shift
  local prod_runner=() opp_runner=()
  while [ "$1" != "--" ]; do prod_runner+=("$1"); shift; done
  shift
  opp_runner=("$@")
  "${prod_runner[@]}" "$workload" "${prod[@]}" >"$scratch/$name-prod.out" 2>"$scratch/$name-prod.err" &
  local prod_pid=$!
  wait_for "$name: production's first 60 steps" 10 past_60 "$scratch/$name-prod.out"
  local from
  from=$(jq -rs '[.[] | select(.kind == "workload-iteration")][-1].t_ms' "$scratch/$name-prod.out")
  "${opp_runner[@]}" "$workload" "${opp[@]}" >"$scratch/$name-opp.out" 2>"$scratch/$name-opp.err" &
  local opp_pid=$!
  wait "$prod_pid" || fail "$name: the production job failed: $(cat "$scratch/$name-prod.err")"
  kill "$opp_pid" 2>/dev/null || true
  wait "$opp_pid" 2>/dev/null || true
  opp_steps=$(jq -rs --argjson a "$from" '[.[] | select(.kind == "workload-iteration"
    and .t_ms <= $a + 8000)] | length' "$scratch/$name-opp.out")
  read -r prod_alone prod_with < <(jq -rs --argjson a "$from" '
    [.[] | select(.kind == "workload-iteration")] as $it
    | ($it[0].t_ms + 500) as $s
    | ([$it[] | select(.t_ms >= $s and .t_ms <= $a)] | length / (($a - $s) / 1000)) as $alone
    | ([$it[] | select(.t_ms > $a and .t_ms <= $a + 8000)] | length / 8) as $with
    | "\($alone) \($with)"' "$scratch/$name-prod.out")
}

pair plain env LD_LIBRARY_PATH="$libexec/sim" -- env LD_LIBRARY_PATH="$libexec/sim"
plain_steps=$opp_steps

start_coordinator
pair shared gpushare-run --sim --name prod -- gpushare-run --sim --opportunistic --name opp --
summary="opportunistic steps in 8 s: $opp_steps under gpushare, $plain_steps without;"
summary+=" production steps/s under gpushare: $prod_alone alone, $prod_with beside it"
echo "$summary" >&2
check() { awk "BEGIN { exit !($1) }" || fail "$2 ($summary)"; }
check "$plain_steps >= 4" "the pair without gpushare did not run as expected"
check "$opp_steps >= 0.5 * $plain_steps" "the opportunistic job was locked out"
check "$prod_with >= 0.9 * $prod_alone" "production was not protected"
echo "coord-yield-lockout: ok"
