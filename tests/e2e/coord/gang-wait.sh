#!/usr/bin/env bash
# Which rank the others wait for (gang.h; docs/compute-sharing.md, "Which
# rank the others wait for"): a 2-rank data-parallel job whose rank 0 has
# four times rank 1's work per step, on two simulated GPUs, an
# opportunistic job beside each rank, under the gpushare loop. Each rank's
# interposer times its all-reduce kernels (NCCL's name on the simulator):
# rank 1's spins while it waits for rank 0, so `gpushare-ctl show` names
# rank 0 as the rank the others wait for, gives rank 1 the wait, and the
# metrics say so too. With --gang-harvest on, the opportunistic job beside
# rank 1 may use part of that wait: it harvests more than the one beside
# rank 0, which stays protected, and the job keeps its speed within the
# margin e2e/coord-gang-protect gives.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
export GPUSHARE_SIM_DEVICES=2
workload="$libexec/gpushare-workload"
common=(--mem 16MiB --verify 1MiB)
opp=("${common[@]}" --kernels-per-iter 8 --kernel-us 2000)
# The use of a waiting rank's wait is off by default (it cost some
# bench/share runs of a skewed gang 7%): on here.
start_coordinator --compute-policy gpushare --gang-harvest on

# The job: torchrun's shape, both ranks of one process tree, rank R on
# GPU R; rank 0 computes 12 ms a step, rank 1 3 ms, then an all-reduce
# and 4 ms of host time.
cat >"$scratch/gang" <<SCRIPT
#!/usr/bin/env bash
step=(${common[*]} --allreduce 100MB --kernels-per-iter 1 --host-us 4000 --per-iteration
  --world-size 2 --rendezvous gang-wait-\$\$ "\$@")
"$workload" "\${step[@]}" --rank 0 --kernel-us 12000 &
"$workload" "\${step[@]}" --rank 1 --kernel-us 3000 &
wait
SCRIPT
chmod +x "$scratch/gang"

# Rank 0's steps/s: rank0_rate (coord.inc).
expect_exit 0 gpushare-run --sim --production --name alone -- "$scratch/gang" --duration 2.5
cp "$scratch/out" "$scratch/alone.jsonl"
alone_from=$(jq -rs '[.[] | select(.kind == "workload-iteration")][0].t_ms + 500' "$scratch/alone.jsonl")
alone=$(rank0_rate "$scratch/alone.jsonl" "$alone_from")

for r in 0 1; do
  CUDA_VISIBLE_DEVICES=$r gpushare-run --sim --opportunistic --name "opp$r" -- "$workload" \
    "${opp[@]}" --duration 10 --per-iteration >"$scratch/opp$r.jsonl" 2>"$scratch/opp$r.err" &
  eval "opp${r}_pid=$!"
done
wait_for "the opportunistic jobs to run" 10 grep -q '"iteration":3,' "$scratch/opp1.jsonl"
gpushare-run --sim --production --name gang -- "$scratch/gang" --duration 7 \
  >"$scratch/gang.jsonl" 2>"$scratch/gang.err" &
gang_pid=$!

# Rank 0 is the one on opp0's GPU.
gpu0=$(gpushare-ctl show opp0 | jq -r '.device')
wait_for "the rank the others wait for" 20 show_has gang \
  '(.ranks | length) == 2 and .waited_for_pid != null'
expect_exit 0 gpushare-ctl show gang
record=$(cat "$scratch/out")
echo "gang: $(jq -c '{waited_for_pid, step_ms, ranks}' <<<"$record")"
jq -e --arg gpu0 "$gpu0" '(.ranks[] | select(.gpus == [$gpu0])) as $slow
  | (.ranks[] | select(.gpus != [$gpu0])) as $fast
  | .waited_for_pid == $slow.pid and $slow.wait_ms == 0 and $fast.wait_ms >= 5
    and $fast.collective_ms > $slow.collective_ms' <<<"$record" >/dev/null ||
  fail "rank 0 (on $gpu0) is not the rank the other waits for: $record"
slow_pid=$(jq -r '.waited_for_pid' <<<"$record")

# Which job uses which rank's wait, and opp1's cap (gpu_share_limit_pct:
# its gaps' share plus what it may take of the wait, which follows the
# loop's level: gang.h, wait_harvest_ppm), 4 times a second until the gang
# ends: "OPP1_USES OPP1_CAP OPP0_USES".
( while kill -0 "$gang_pid" 2>/dev/null; do
    one=$(gpushare-ctl show opp1 2>/dev/null | jq -r '"\(.uses_wait_of_pid // 0) \(.gpu_share_limit_pct // 0)"')
    zero=$(gpushare-ctl show opp0 2>/dev/null | jq -r '.uses_wait_of_pid // 0')
    [ -n "$one" ] && [ -n "$zero" ] && echo "$one $zero"
    sleep 0.25
  done >"$scratch/uses" ) &
sampler_pid=$!

expect_exit 0 gpushare-ctl metrics
grep -E "^gpushare_job_rank_waited_for\{.*job_name=\"gang\".*pid=\"$slow_pid\"\} 1$" \
  "$scratch/out" >/dev/null || fail "no waited-for metric for pid $slow_pid: $(grep waited_for "$scratch/out")"
grep -E "^gpushare_job_rank_collective_wait_seconds\{.*job_name=\"gang\"" "$scratch/out" >/dev/null ||
  fail "no collective wait metric: $(grep collective "$scratch/out")"

wait "$gang_pid" || fail "the gang failed: $(cat "$scratch/gang.err")"
wait "$sampler_pid" || true
wait "$opp0_pid" "$opp1_pid" || fail "an opportunistic job failed: $(cat "$scratch"/opp*.err)"

# Over the gang's run after its first 2 s (profiled, measured, settled).
from=$(jq -rs '[.[] | select(.kind == "workload-iteration")][0].t_ms + 2000' "$scratch/gang.jsonl")
to=$(jq -rs '[.[] | select(.kind == "workload-iteration")][-1].t_ms' "$scratch/gang.jsonl")
with=$(rank0_rate "$scratch/gang.jsonl" "$from")
opp_rate() {
  jq -rs --argjson from "$from" --argjson to "$to" '[.[] | select(.kind == "workload-iteration"
    and .t_ms >= $from and .t_ms <= $to) | .t_ms]
    | if length < 2 then 0 else (length - 1) / ((.[-1] - .[0]) / 1000) end' "$1"
}
o0=$(opp_rate "$scratch/opp0.jsonl") o1=$(opp_rate "$scratch/opp1.jsonl")
echo "gang alone $alone steps/s, beside two opportunistic jobs $with;" \
  "opp0 (beside the slow rank) $o0 it/s, opp1 (beside the waiting rank) $o1" >&2
# show says who uses which wait: opp1 the waiting rank's, at some point
# (it starts a second after the rank is first seen to wait); opp0, beside
# the rank the others wait for, never.
wait_pid=$(jq -r --argjson slow "$slow_pid" '.ranks[] | select(.pid != $slow) | .pid' <<<"$record")
awk -v p="$wait_pid" '$1 == p { found = 1 } END { exit !found }' "$scratch/uses" ||
  fail "opp1 was never shown using rank $wait_pid's wait: $(tr '\n' ';' <"$scratch/uses")"
awk '$3 != 0 { bad = 1 } END { exit bad }' "$scratch/uses" ||
  fail "opp0, beside the rank the others wait for, was shown using a wait: $(tr '\n' ';' <"$scratch/uses")"
# Over the samples from opp1's first use on: the share of them in use and
# its mean cap (about half the GPU at the full level: a quarter of gaps
# and half of rank 1's wait).
read -r used cap < <(awk -v p="$wait_pid" '$1 == p { on = 1 } on { n++; u += ($1 == p); c += $2 }
  END { printf "%.2f %.1f\n", u / n, c / n }' "$scratch/uses")
echo "opp1 used rank $wait_pid's wait in $used of the samples from its first use, its cap ${cap}% on average" >&2
# The harvest's contract: the job beside the waiting rank gets more, unless
# the gang slowed past the loop's target meanwhile, which cuts the level
# and the wait's use with it, or ends the use and blocks it for 20 s
# (gang.h, HarvestTrial). The gang runs within about 2.5% of its speed
# alone here, at the loop's 3% target, so the host's noise on a 2-core
# machine does that in some runs (opp1's cap at 25-35%), and then
# protection is the right outcome: the speeds are compared when the use
# held.
if awk -v w="$with" -v a="$alone" -v u="$used" -v c="$cap" \
    'BEGIN { exit !(w >= 0.97 * a && u >= 0.8 && c >= 40) }'; then
  awk -v a="$o0" -v b="$o1" 'BEGIN { exit !(b > 1.3 * a && b > 1) }' ||
    fail "the job beside the waiting rank did not harvest more: $o1 it/s against $o0," \
      "with the gang at $with steps/s of $alone alone and opp1's cap at $cap%"
else
  echo "the gang ran below 0.97 of alone ($with of $alone), or the use was ended or cut" \
    "(in use $used of the time, cap $cap%): the speeds are not compared" >&2
fi
# The margin e2e/coord-gang-protect gives (protection from none: 0.56-0.60
# without gpushare); bench/share measures the figure.
awk -v w="$with" -v a="$alone" 'BEGIN { exit !(w >= 0.65 * a) }' ||
  fail "the gang was not protected: $with steps/s against $alone alone"
echo "ok"
