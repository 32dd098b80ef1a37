#!/usr/bin/env bash
# A limit change reaches the job within 100 ms of the coordinator making it:
# the job spins on mem_limit() (the limits page is shared memory, so no
# message is involved) and notes when it sees the new value; the
# coordinator's log says when it made the change. Prints the figures,
# including the end-to-end time from starting `gpushare-ctl set`.
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
  seen_ms=$(( $(jq -r .realtime_ns <<<"$line") / 1000000 ))
  # The coordinator logs the change right after making it (ms resolution).
  stamp=$(grep "set mem-limit=$want on job" "$scratch/coordinator.log" | tail -n 1 |
    sed -E 's/^gpushare-ctl: note: ([^ ]+) .*/\1/')
  [ -n "$stamp" ] || fail "the coordinator did not log the change"
  made_ms=$(date -d "$stamp" +%s%3N)
  reach_ms=$(( seen_ms - made_ms ))
  [ "$reach_ms" -gt "$worst" ] && worst=$reach_ms
  echo "change $round: reached the job ${reach_ms} ms after the coordinator made it;" \
    "$(( seen_ms - start_ns / 1000000 )) ms after gpushare-ctl set was started"
done
[ "$worst" -lt 100 ] || fail "a limit change took ${worst} ms to reach the job (limit: 100 ms)"
