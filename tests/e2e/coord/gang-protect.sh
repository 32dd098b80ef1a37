#!/usr/bin/env bash
# A production job on several GPUs is controlled as one (gang.h,
# docs/compute-sharing.md "Production jobs on several GPUs"): a 2-rank
# data-parallel job, each rank bound to its own GPU (--bind-gpu, as
# `srun --gpu-bind` binds tasks), an opportunistic job beside each rank,
# under the gpushare loop. One controller drives both GPUs: in every
# snapshot of `gpushare-ctl ls` the two opportunistic jobs are in the same
# phase under the same share limit (one controller per GPU, as before,
# drifts apart: each GPU measures the gang on its own schedule), and the
# gang is protected within a generous margin (bench/share measures the
# figure) while both opportunistic jobs progress.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
export GPUSHARE_SIM_DEVICES=2
workload="$libexec/gpushare-workload"
common=(--mem 16MiB --verify 1MiB)
gang=("${common[@]}" --launch 2 --bind-gpu --allreduce 100MB --kernels-per-iter 1
  --kernel-us 8000 --host-us 8000)
opp=("${common[@]}" --kernels-per-iter 8 --kernel-us 2000)
start_coordinator --compute-policy gpushare

# Rank 0's steps/s: rank0_rate (coord.inc).
expect_exit 0 gpushare-run --sim --production --name alone -- "$workload" "${gang[@]}" \
  --duration 2.5 --per-iteration
cp "$scratch/out" "$scratch/alone.jsonl"
alone_from=$(jq -rs '[.[] | select(.kind == "workload-iteration")][0].t_ms + 500' "$scratch/alone.jsonl")
alone=$(rank0_rate "$scratch/alone.jsonl" "$alone_from")

for r in 0 1; do
  CUDA_VISIBLE_DEVICES=$r gpushare-run --sim --opportunistic --name "opp$r" -- "$workload" \
    "${opp[@]}" --duration 9 --per-iteration >"$scratch/opp$r.jsonl" 2>"$scratch/opp$r.err" &
  eval "opp${r}_pid=$!"
done
wait_for "the opportunistic jobs to run" 10 grep -q '"iteration":3,' "$scratch/opp1.jsonl"
gpushare-run --sim --production --name gang -- "$workload" "${gang[@]}" --duration 6 \
  --per-iteration >"$scratch/gang.jsonl" 2>"$scratch/gang.err" &
gang_pid=$!

# Both ranks registered and measured: the gang's GPUs are then one group.
wait_for "the gang's ranks" 20 show_has gang '(.ranks | length) == 2 and .step_ms != null'
snapshots=0 disagree=0
while kill -0 "$gang_pid" 2>/dev/null && [ "$snapshots" -lt 30 ]; do
  gpushare-ctl ls >"$scratch/ls" 2>/dev/null || break
  pair=$(jq -sc '[.[] | select(.name == "opp0" or .name == "opp1")] | sort_by(.name)
    | map({compute_phase, gpu_share_limit_pct})' "$scratch/ls")
  # Counted only while the same listing shows both ranks: a rank that has
  # ended (the gang stops one rank at a time) leaves no gang to control.
  ranks=$(jq -s '[.[] | select(.name == "gang")][0].ranks // [] | length' "$scratch/ls")
  if [ "$(jq 'length' <<<"$pair")" = 2 ] && [ "$ranks" = 2 ]; then
    snapshots=$((snapshots + 1))
    jq -e '.[0] == .[1]' <<<"$pair" >/dev/null || {
      disagree=$((disagree + 1))
      echo "apart: $pair" >&2
    }
  fi
  sleep 0.1  # the sampling period of the snapshots, not a wait for an event
done
wait "$gang_pid" || fail "the gang failed: $(cat "$scratch/gang.err")"
wait "$opp0_pid" "$opp1_pid" || fail "an opportunistic job failed: $(cat "$scratch"/opp*.err)"

[ "$snapshots" -ge 10 ] || fail "only $snapshots snapshots of the two opportunistic jobs"
[ "$disagree" = 0 ] ||
  fail "the gang's two GPUs were controlled apart in $disagree of $snapshots snapshots"

from=$(jq -rs '[.[] | select(.kind == "workload-iteration")][0].t_ms + 1000' "$scratch/gang.jsonl")
with=$(rank0_rate "$scratch/gang.jsonl" "$from")
opp_rate() {
  jq -rs --argjson from "$from" '[.[] | select(.kind == "workload-iteration" and .t_ms >= $from)
    | .t_ms] | if length < 2 then 0 else (length - 1) / ((.[-1] - .[0]) / 1000) end' "$1"
}
o0=$(opp_rate "$scratch/opp0.jsonl") o1=$(opp_rate "$scratch/opp1.jsonl")
echo "gang alone $alone steps/s, beside two opportunistic jobs $with; opp0 $o0 it/s, opp1 $o1;" \
  "$snapshots snapshots" >&2
# Generous: without gpushare the gang runs at 0.56-0.60 of alone beside
# two such jobs; the 0.97 target is bench/share's, on a machine whose load
# is said. Usually 0.96 here, but a lapse of a second or two, the
# opportunistic jobs overrunning the ranks' host gaps (issue 38, open;
# docs/compute-sharing.md), has cost the gang 0.86 on a quiet machine,
# 0.82 in a loaded test run and 0.71 once in a clean clone's CI run: the
# bound tells protection from none (0.56-0.60), not the target.
awk -v w="$with" -v a="$alone" 'BEGIN { exit !(w >= 0.65 * a) }' ||
  fail "the gang was not protected: $with steps/s against $alone alone"
awk -v a="$o0" -v b="$o1" 'BEGIN { exit !(a > 1 && b > 1) }' ||
  fail "an opportunistic job did not progress: $o0 and $o1 it/s"
echo "ok"
