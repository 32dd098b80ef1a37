#!/usr/bin/env bash
# A limit change reaches the job within 100 ms: the time from starting
# `gpushare-ctl set` to the job's mem_limit() returning the new value (the
# job spins on it; the limits page is shared memory, so no message is
# involved). Prints the figures measured.
. "$(dirname "$0")/common.inc"
. "$e2e_dir/coord.inc"

start_coordinator
start_job train GPUSHARE_JOB=train GPUSHARE_MEM_LIMIT=8GiB
worst=0
for round in 1 2 3 4 5; do
  want=$(( round * 1073741824 ))
  echo "watch-limit $want" >&"${job_fd[train]}"
  before=$(wc -l <"$scratch/job-train.out")
  start_ns=$(date +%s%N)
  gpushare-ctl set train --mem-limit "$want" >/dev/null
  wait_for "the job to see the new limit" 5 lines_above "$scratch/job-train.out" "$before"
  line=$(tail -n 1 "$scratch/job-train.out")
  jq -e '.seen' <<<"$line" >/dev/null || fail "the job never saw limit $want: $line"
  seen_ns=$(jq -r .realtime_ns <<<"$line")
  latency_us=$(( (seen_ns - start_ns) / 1000 ))
  [ "$latency_us" -gt "$worst" ] && worst=$latency_us
  echo "limit change $round reached the job in ${latency_us} us (including starting gpushare-ctl)"
done
[ "$worst" -lt 100000 ] || fail "a limit change took ${worst} us to reach the job (limit: 100 ms)"
