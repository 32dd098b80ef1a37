#!/usr/bin/env bash
# A production job whose ranks are processes on several GPUs is one job
# (gpushare-ctl(1), "Jobs on several GPUs"): `gpushare-run --production`
# of `gpushare-workload --launch 2` on two simulated GPUs lists one job
# whose record has a rank per process, each with the GPU it uses and its
# step time, and the job's step; the table shows its GPUs; the metrics
# carry each rank's step. A one-GPU job's record has no ranks.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
export GPUSHARE_SIM_DEVICES=2
workload="$libexec/gpushare-workload"
start_coordinator --compute-policy gpushare

gpushare-run --sim --production --name gang -- "$workload" --launch 2 --allreduce 100MB \
  --mem 16MiB --verify 1MiB --kernels-per-iter 1 --kernel-us 8000 --host-us 8000 \
  --stop-file "$scratch/stop" --iterations 100000000 >"$scratch/gang.jsonl" 2>"$scratch/gang.err" &
gang=$!
CUDA_VISIBLE_DEVICES=1 gpushare-run --sim --production --name single -- "$workload" \
  --mem 16MiB --verify 1MiB --kernels-per-iter 1 --kernel-us 1000 --host-us 10000 \
  --stop-file "$scratch/stop" --iterations 100000000 >/dev/null 2>"$scratch/single.err" &
single=$!

# Both ranks measured: a step of 8 ms of kernels and 8 ms of host time.
wait_for "the gang's ranks and step" 20 show_has gang \
  '(.ranks | length) == 2 and .step_ms != null and all(.ranks[]; .step_ms != null)'
expect_exit 0 gpushare-ctl show gang
record=$(cat "$scratch/out")
echo "gang: $(jq -c '{pids, step_ms, ranks}' <<<"$record")"
jq -e '.pids as $pids | [.ranks[].pid] - $pids == [] and
  ([.ranks[].gpus[]] | sort) == ([.devices[].uuid] | sort) and
  all(.ranks[]; (.gpus | length) == 1) and
  (.ranks[0].gpus != .ranks[1].gpus) and
  .step_ms >= 14 and .step_ms <= 40' <<<"$record" >/dev/null ||
  fail "unexpected ranks: $record"

show_has single '.ranks == null and .step_ms == null' || fail "a one-GPU job has ranks: $(gpushare-ctl show single)"

expect_exit 0 gpushare-ctl ls --format table
grep -E "gang .*GPU-[0-9a-f]{8}\+1" "$scratch/out" >/dev/null ||
  fail "the table does not show the gang's second GPU: $(cat "$scratch/out")"

expect_exit 0 gpushare-ctl metrics
for pid in $(jq -r '.ranks[].pid' <<<"$record"); do
  grep -E "^gpushare_job_rank_step_seconds\{.*job_name=\"gang\".*pid=\"$pid\"\} 0\.0[1-4]" \
    "$scratch/out" >/dev/null || fail "no step metric for rank pid $pid: $(grep rank_step "$scratch/out")"
done

touch "$scratch/stop"
wait "$gang" || fail "the gang failed: $(cat "$scratch/gang.err")"
wait "$single" || fail "the one-GPU job failed: $(cat "$scratch/single.err")"
echo "ok"
