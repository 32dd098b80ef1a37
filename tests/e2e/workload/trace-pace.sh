#!/usr/bin/env bash
# gpushare-workload --pace: what a launch that blocked does to the launches
# after it in a replayed step. With a stream queue of one kernel
# (GPUSHARE_SIM_MAX_PENDING=1) the second launch of a step blocks until the
# first kernel, 40 ms long, ends. Ten 10-us kernels follow at 1-ms offsets
# from 1 to 10 ms. --pace schedule launches the overdue ones at once
# (a step of about 40 ms); --pace host shifts them by the time the launch
# blocked, as a Python framework's next operator waits for the call to
# return (a step of about 49 ms).
. "$(dirname "$0")/../common.inc"
workload="$libexec/gpushare-workload"
use_sim
export GPUSHARE_SIM_MAX_PENDING=1

{
  echo "launch_us,start_us,kernel_us,stream,kernel"
  echo "0,0,40000,7,long"
  for i in 1 2 3 4 5 6 7 8 9 10; do echo "$((i * 1000)),0,10,7,short$i"; done
} >"$scratch/step.csv"

mean_step_ms() {  # PACE: the mean iteration_ms of 4 steps after the first
  expect_exit 0 "$workload" --mem 16MiB --trace "$scratch/step.csv" --pace "$1" \
    --iterations 5 --per-iteration
  jq -s '[.[] | select(.kind == "workload-iteration") | .iteration_ms][1:] | add / length' \
    "$scratch/out"
}
schedule_ms=$(mean_step_ms schedule)
host_ms=$(mean_step_ms host)
figures="schedule $schedule_ms ms, host $host_ms ms a step"
check() { awk "BEGIN { exit !($1) }" || fail "$2 ($figures)"; }
check "$schedule_ms >= 39 && $schedule_ms < 46" "--pace schedule did not catch up with its schedule"
check "$host_ms >= 47" "--pace host did not shift the step's schedule by the blocked launch"
check "$host_ms - $schedule_ms >= 6" "the two paces did not differ by the ten 1-ms offsets"

# Without a trace --pace is a usage error, and a pace it does not know is one.
expect_exit 2 "$workload" --pace host
expect_exit 2 "$workload" --trace "$scratch/step.csv" --pace later
echo "workload-trace-pace: ok ($figures)"
