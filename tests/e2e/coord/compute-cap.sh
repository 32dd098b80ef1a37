#!/usr/bin/env bash
# A static cap (gpushare-run -p compute=N%) holds a job's share of GPU time
# on the simulated GPU within 5 points, with or without the coordinator, and
# `gpushare-ctl set JOB compute=N%` changes it live. The job alone runs
# 4 kernels of 2 ms per iteration back to back: uncapped, 125 iterations/s
# (the GPU 100% busy); its share is iterations/s x 8 ms.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"
workload="$libexec/gpushare-workload"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
job=(--mem 16MiB --verify 1MiB --kernels-per-iter 4 --kernel-us 2000)

share() {  # share of GPU time from a summary record, as a percentage
  jq -r 'select(.kind == "workload-summary") | .iterations_per_s * 0.8' "$1"
}
within() {  # within VALUE LOW HIGH
  awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v >= lo && v <= hi) }'
}

# Without a coordinator: the job enforces its own cap.
expect_exit 0 gpushare-run --sim --no-coordinator -p compute=30% -- "$workload" "${job[@]}" --duration 2
s=$(share "$scratch/out")
within "$s" 25 35 || fail "compute=30% without a coordinator gave ${s}% of the GPU"

start_coordinator
expect_exit 0 gpushare-run --sim -p compute=70% -- "$workload" "${job[@]}" --duration 2
s=$(share "$scratch/out")
within "$s" 65 75 || fail "compute=70% gave ${s}% of the GPU"

# Live: 20% for the first part of the run, then 60%.
gpushare-run --sim --name capped -p compute=20% -- "$workload" "${job[@]}" --duration 4 \
  --per-iteration >"$scratch/live.out" 2>"$scratch/live.err" &
live=$!
wait_for "the capped job to register" 5 grep -q '"iteration":3,' "$scratch/live.out"
show_has capped '.compute_cap_pct == 20' || fail "show lacks the cap"
wait_for "a second of iterations at 20%" 10 bash -c "[ \"\$(jq -rs '[.[] | select(.kind == \"workload-iteration\")] | (.[-1].t_ms - .[0].t_ms) >= 1000' '$scratch/live.out' 2>/dev/null)\" = true ]"
expect_exit 0 gpushare-ctl set capped compute=60%
wait "$live" || fail "the capped job failed: $(cat "$scratch/live.err")"
# Iterations from 0.3 s to 1 s of the job's own clock (before the change),
# and in its last second (well after it).
jq -s '
  [.[] | select(.kind == "workload-iteration")] as $it
  | ($it | length) as $n
  | {before: ([$it[] | select(.t_ms >= ($it[0].t_ms + 300) and .t_ms <= ($it[0].t_ms + 1000))] | length),
     after: ([$it[] | select(.t_ms >= ($it[$n - 1].t_ms - 1000))] | length)}' \
  "$scratch/live.out" >"$scratch/rates"
before=$(jq .before "$scratch/rates")  # iterations in 0.7 s at 20%: about 17
after=$(jq .after "$scratch/rates")    # iterations in the last 1 s at 60%: about 75
within "$before" 12 23 || fail "at 20% the job ran $before iterations in 0.7 s: $(cat "$scratch/rates")"
within "$after" 66 84 || fail "after set compute=60% the job ran $after iterations in 1 s"
