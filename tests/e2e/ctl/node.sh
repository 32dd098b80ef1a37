#!/usr/bin/env bash
# `node` reports each device jobs run on, with memory used and free and
# totals per class, and the node's totals; a job leaving frees its share.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"

start_coordinator
start_job prod GPUSHARE_JOB=prod GPUSHARE_MEM_LIMIT=8GiB -- --mem-total 16GiB
start_job opp GPUSHARE_JOB=opp GPUSHARE_QOS=opportunistic GPUSHARE_MEM_LIMIT=4GiB -- --mem-total 16GiB
start_job other GPUSHARE_JOB=other GPUSHARE_QOS=opportunistic -- --mem-total 8GiB \
  --uuid ffeeddccbbaa99887766554433221100
job_say prod alloc 6GiB >/dev/null
job_say opp alloc 3GiB >/dev/null
job_say other alloc 1GiB >/dev/null
wait_for "telemetry" 2 sh -c "gpushare-ctl node | jq -se '.[-1].mem_used_bytes == 10737418240'"

expect_exit 0 gpushare-ctl node
expect_golden ctl/node.jsonl "$scratch/out"
expect_exit 0 gpushare-ctl node --format table
expect_golden ctl/node.table "$scratch/out"

end_job opp
wait_for "the job to leave" 2 not_listed "${job_pid[opp]}"
gpushare-ctl node | jq -se '.[0].mem_free_bytes == 10737418240 and .[0].opportunistic.jobs == 0' \
  >/dev/null || fail "the departed job's memory still counts"
