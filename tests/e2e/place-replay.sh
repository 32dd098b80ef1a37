#!/usr/bin/env bash
# gpushare-place replay runs a public trace through the placer and prints
# the common metrics line per policy; traces it cannot replay are refused.
. "$(dirname "$0")/common.inc"
traces="$GPUSHARE_SOURCE_DIR/../shared/data/traces"
[ -d "$traces" ] || skip "no trace folder at $traces (see its README)"
data="$GPUSHARE_SOURCE_DIR/tests/data/place"

# The Tiresias 60-job trace on 16 GPUs, where jobs queue: both policies.
expect_exit 0 gpushare-place replay --trace "$traces/tiresias-60_job.csv" \
  --cluster "$data/replay-16.toml" --header
cp "$scratch/out" "$scratch/tiresias-16.csv"
expect_golden place/replay-tiresias-16.csv "$scratch/tiresias-16.csv"
[ ! -s "$scratch/err" ] || fail "stderr is not empty"

# The Tiresias cluster spec is a cluster too; JSON output has kind/version.
expect_exit 0 gpushare-place replay -t "$traces/tiresias-60_job.csv" \
  -c "$traces/tiresias-n32g4.csv" -p antman -f json
jq -e '.kind == "replay" and .version == 1 and .policy == "antman" and .jobs == 60' \
  "$scratch/out" >/dev/null || fail "unexpected JSON: $(cat "$scratch/out")"

# Pollux workloads have no durations.
expect_exit 2 gpushare-place replay -t "$traces/pollux-workload-6.csv" -c "$data/replay-16.toml"
expect_grep "a Pollux workload has no job durations" "$scratch/err"

# Jobs larger than the cluster are left out, with a warning.
printf 'job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n0,1,0,1,m,10,1\n1,64,0,1,m,10,1\n' >big.csv
expect_exit 0 gpushare-place replay -t big.csv -c "$data/replay-16.toml" -p exclusive
expect_grep "^exclusive,10\.0,10\.0,10\.0,0\.0,.*,1,1$" "$scratch/out"
expect_grep "^gpushare-place: warning: big.csv: 1 jobs ask for more GPUs than the cluster can hold; left out$" "$scratch/err"

# Usage errors.
expect_exit 2 gpushare-place replay -c "$data/replay-16.toml"
expect_grep "trace is required" "$scratch/err"
expect_exit 2 gpushare-place replay -t big.csv -c "$data/replay-16.toml" --policy fifo
expect_exit 2 gpushare-place replay -t big.csv -c "$data/replay-16.toml" --queue-threshold 10
expect_grep "needs a unit" "$scratch/err"
