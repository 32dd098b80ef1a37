#!/usr/bin/env bash
# A limit change reaches the job at once: the limits page is memory shared
# with the job, so the new limit is what the job reads by the time
# `gpushare-ctl set` has answered, with no message to the job in between,
# and the job's next allocation is held to it. Checked as an order of
# events (set answers, then the job reads), not as a time: nothing here
# spins or races the clock. Prints how long each `set` took, as a figure.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"

start_coordinator
start_job train GPUSHARE_JOB=train GPUSHARE_MEM_LIMIT=8GiB
times=()
for round in 1 2 3 4 5; do
  want=$(( (6 - round) * 1073741824 ))
  start=$(now_ms)
  gpushare-ctl set train --mem-limit "$want" >"$scratch/out"
  times+=("$(( $(now_ms) - start ))")
  jq -e --argjson want "$want" '.mem_limit_bytes == $want' "$scratch/out" >/dev/null ||
    fail "set answered with another limit: $(cat "$scratch/out")"
  job_say train status | jq -e --argjson want "$want" '.mem_limit_bytes == $want' >/dev/null ||
    fail "round $round: the job did not read limit $want once set had answered"
  job_say train alloc "$(( want + 1 ))" | jq -e '.ok == false' >/dev/null ||
    fail "round $round: an allocation over the new limit $want was allowed"
done
expect_grep "set mem-limit=1073741824 on job" "$scratch/coordinator.log"
echo "coord-limit-latency: ok (gpushare-ctl set took ${times[*]} ms, end to end)"
