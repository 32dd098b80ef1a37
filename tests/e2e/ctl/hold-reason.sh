#!/usr/bin/env bash
# gpushare-ctl show says why an opportunistic job is held and what GPU time
# it got in its last second, so that a user who sees it at 0% sees the
# reason: running alone, held while a production job keeps
# the GPU busy nearly all the time (waiting-for-gap, or learning while its
# cost per launch is not measured yet), paused by the operator; and the
# metrics carry the same word.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
workload="$libexec/gpushare-workload"
common=(--mem 16MiB --verify 1MiB)

start_coordinator
gpushare-run --sim --opportunistic --name opp -- "$workload" "${common[@]}" \
  --kernels-per-iter 8 --kernel-us 1000 --duration 60 >"$scratch/opp.out" 2>"$scratch/opp.err" &
opp_pid=$!

hold_is() {  # WORD... : show's hold is one of them
  local got
  got=$(gpushare-ctl show opp | jq -r .hold)
  for word in "$@"; do [ "$got" = "$word" ] && return 0; done
  return 1
}
gpu_moved() { gpushare-ctl show opp | jq -e '.gpu_ns_last_window > 0' >/dev/null; }

wait_for "the opportunistic job to run alone" 10 hold_is running

# A production job busy 97% of the time: the opportunistic one waits for
# its gaps.
gpushare-run --sim --name prod -- "$workload" "${common[@]}" \
  --kernels-per-iter 1 --kernel-us 100000 --host-us 3000 --duration 60 \
  >"$scratch/prod.out" 2>"$scratch/prod.err" &
prod_pid=$!
wait_for "the opportunistic job to be held for production's gaps" 15 \
  hold_is waiting-for-gap learning
# Its launches are gated now, so their GPU time is measured: what it got
# in production's gaps.
wait_for "its GPU time of the last window" 10 gpu_moved
gpushare-ctl show --format table opp >"$scratch/table"
expect_grep ' +(waiting-for-gap|learning) +running *$' "$scratch/table"
gpushare-ctl metrics >"$scratch/metrics"
expect_grep 'gpushare_job_hold\{.*job_name="opp".*reason="(waiting-for-gap|learning)"\} 1' \
  "$scratch/metrics"
expect_grep 'gpushare_job_gpu_seconds_last_window\{.*job_name="opp"' "$scratch/metrics"

kill "$prod_pid"
wait "$prod_pid" 2>/dev/null || true
expect_exit 0 gpushare-ctl pause opp
wait_for "the paused job's reason" 10 hold_is paused-operator
expect_exit 0 gpushare-ctl resume opp
wait_for "the resumed job to run" 10 hold_is running

kill "$opp_pid"
wait "$opp_pid" 2>/dev/null || true
echo "ctl-hold-reason: ok"
