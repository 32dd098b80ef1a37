#!/usr/bin/env bash
# A data-parallel job on two simulated GPUs: `gpushare-workload --launch 2`
# starts two ranks, one per device, whose records say their rank and step;
# every step ends with an all-reduce, so a plain (no gpushare) job on rank
# 1's device slows rank 0 as much as rank 1, while a job on device 1 does
# not slow a single-process job on device 0. A rank killed stops the job.
# With --bind-gpu each rank sees only its own GPU.
. "$(dirname "$0")/../common.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
export LD_LIBRARY_PATH="$libexec/sim" GPUSHARE_SIM_DEVICES=2
workload="$libexec/gpushare-workload"
step=(--mem 16MiB --verify 1MiB --kernels-per-iter 1 --kernel-us 8000 --host-us 4000)

# Ranks and steps: 30 each, every record labelled.
"$workload" --launch 2 --allreduce 100MB "${step[@]}" --iterations 30 --per-iteration \
  >"$scratch/gang.jsonl"
for r in 0 1; do
  n=$(jq -s "[.[] | select(.kind == \"workload-iteration\" and .rank == $r and .world_size == 2)] | length" \
    "$scratch/gang.jsonl")
  [ "$n" = 30 ] || fail "rank $r printed $n step records, not 30"
  last=$(jq -s "[.[] | select(.kind == \"workload-iteration\" and .rank == $r)][-1].step" "$scratch/gang.jsonl")
  [ "$last" = 29 ] || fail "rank $r's last step is $last"
  ar=$(jq -s "[.[] | select(.kind == \"workload-summary\" and .rank == $r)][0].allreduces" "$scratch/gang.jsonl")
  [ "$ar" = 30 ] || fail "rank $r ran $ar all-reduces"
done

# Steps per second of rank R of a gang, with or without a busy job beside
# rank 1 (8 ms kernels back to back on device 1).
rate() {  # RANKS_OUTPUT RANK
  jq -s "[.[] | select(.kind == \"workload-summary\" and (.rank // 0) == $2)][0].iterations_per_s" "$1"
}
"$workload" --launch 2 --allreduce 100MB "${step[@]}" --duration 2 >"$scratch/alone.jsonl"
"$workload" --device 1 --mem 16MiB --verify 1MiB --kernels-per-iter 4 --kernel-us 8000 \
  --stop-file "$scratch/stop" --iterations 100000000 >"$scratch/busy.jsonl" &
busy=$!
"$workload" --launch 2 --allreduce 100MB "${step[@]}" --duration 2 >"$scratch/beside.jsonl"
"$workload" "${step[@]}" --device 0 --duration 2 >"$scratch/single.jsonl"
touch "$scratch/stop"
wait "$busy" || fail "the busy job failed"
"$workload" "${step[@]}" --device 0 --duration 2 >"$scratch/single-alone.jsonl"
alone0=$(rate "$scratch/alone.jsonl" 0)
beside0=$(rate "$scratch/beside.jsonl" 0)
beside1=$(rate "$scratch/beside.jsonl" 1)
single=$(rate "$scratch/single.jsonl" 0)
single_alone=$(rate "$scratch/single-alone.jsonl" 0)
echo "gang alone: rank 0 $alone0 steps/s; a busy job beside rank 1: rank 0 $beside0, rank 1 $beside1"
echo "one process on device 0: $single_alone it/s alone, $single with the busy job on device 1"
# Time slices give the busy job about half of device 1 while rank 1
# computes: rank 1's 8 ms take about 16 ms, and rank 0 waits for it.
awk -v a="$alone0" -v b="$beside0" 'BEGIN { exit !(b < 0.85 * a) }' ||
  fail "a busy job beside rank 1 left rank 0 at $beside0 of $alone0 steps/s"
awk -v a="$beside0" -v b="$beside1" 'BEGIN { exit !(a < 1.1 * b && b < 1.1 * a) }' ||
  fail "the ranks kept different paces: $beside0 and $beside1 steps/s"
awk -v a="$single_alone" -v b="$single" 'BEGIN { exit !(b > 0.85 * a) }' ||
  fail "a job on device 1 slowed a single process on device 0: $single of $single_alone it/s"

# A rank killed: the launcher stops the other and fails.
"$workload" --launch 2 --allreduce 1MB "${step[@]}" --duration 30 --per-iteration \
  >"$scratch/killed.jsonl" 2>"$scratch/killed.err" &
launcher=$!
for _ in $(seq 400); do
  [ "$(grep -c '"rank":1' "$scratch/killed.jsonl" || true)" -ge 3 ] && break
  sleep 0.05
done
rank1=$(pgrep -P "$launcher" -f -- "--rank 1 " | head -1)
[ -n "$rank1" ] || fail "no rank 1 under the launcher"
kill -KILL "$rank1"
status=0
wait "$launcher" || status=$?
[ "$status" != 0 ] || fail "the launcher succeeded though rank 1 was killed"
grep -q "rank 1 failed" "$scratch/killed.err" || fail "the launcher did not say rank 1 failed: $(cat "$scratch/killed.err")"
pgrep -f -- "--rendezvous launch-$launcher" >/dev/null && fail "a rank outlived its launcher's failure"

# --bind-gpu: rank R sees only the R-th GPU the launcher sees. With the
# launcher seeing "1,0", rank 0 runs on physical GPU 1 and rank 1 on GPU 0.
CUDA_VISIBLE_DEVICES=1,0 "$workload" --launch 2 --bind-gpu --allreduce 1MB "${step[@]}" \
  --stop-file "$scratch/stop-bound" --iterations 100000000 >/dev/null 2>"$scratch/bound.err" &
bound=$!
placed=""
for _ in $(seq 400); do
  r0=$(pgrep -P "$bound" -f -- "--rank 0 " | head -1 || true)
  r1=$(pgrep -P "$bound" -f -- "--rank 1 " | head -1 || true)
  if [ -n "$r0" ] && [ -n "$r1" ]; then
    placed=$("$libexec/tests/gpushare-nvml-smi" | jq -sc '[.[] | [.processes[]?.pid]]' || true)
    [ "$placed" = "[[$r1],[$r0]]" ] && break
  fi
  sleep 0.05
done
touch "$scratch/stop-bound"
wait "$bound" || fail "the bound gang failed: $(cat "$scratch/bound.err")"
[ "$placed" = "[[$r1],[$r0]]" ] ||
  fail "bound ranks 0 ($r0) and 1 ($r1) are not on GPUs 1 and 0: processes per GPU $placed"
CUDA_VISIBLE_DEVICES=1 expect_exit 2 "$workload" --launch 2 --bind-gpu --iterations 1
grep -q "rank 1 has no GPU of its own" "$scratch/err" || fail "no message for a rank without a GPU"

# Usage: a rank not below the world size.
expect_exit 2 "$workload" --rank 2 --world-size 2 --iterations 1
grep -q "is not below --world-size" "$scratch/err" || fail "no message for --rank 2 --world-size 2"
echo "ok"
