#!/usr/bin/env bash
# gpushare-place replay runs a trace through every policy and prints one
# metrics record each; its options change what they say they change; bad
# input is reported with its place. Uses only traces shipped with the tests.
. "$(dirname "$0")/../common.inc"
data="$GPUSHARE_SOURCE_DIR/tests/data/place"
trace="$data/tiresias-60_job.csv"

# The Tiresias 60-job trace on 16 GPUs, where jobs queue: every policy.
expect_exit 0 gpushare-place replay --trace "$trace" --cluster "$data/replay-16.toml" --header
cp "$scratch/out" "$scratch/tiresias-16.csv"
expect_golden place/replay-tiresias-16.csv "$scratch/tiresias-16.csv"
[ ! -s "$scratch/err" ] || fail "stderr is not empty"
[ "$(cut -d, -f1 "$scratch/tiresias-16.csv" | tr '\n' ' ')" = "policy exclusive yarn-cs gandiva antman " ] ||
  fail "not one line per policy: $(cat "$scratch/tiresias-16.csv")"

# The Tiresias cluster spec is a cluster too; JSON output has kind/version,
# and the same run twice gives the same record (seeded).
expect_exit 0 gpushare-place replay -t "$trace" -c "$data/tiresias-n32g4.csv" -p antman -f json
jq -e '.kind == "replay" and .version == 2 and .policy == "antman" and .jobs == 60' \
  "$scratch/out" >/dev/null || fail "unexpected JSON: $(cat "$scratch/out")"
cp "$scratch/out" first.json
expect_exit 0 gpushare-place replay -t "$trace" -c "$data/tiresias-n32g4.csv" -p antman -f json
cmp -s first.json "$scratch/out" || fail "two runs differ"

# --seed draws other job properties; --job-util fixes them.
expect_exit 0 gpushare-place replay -t "$trace" -c "$data/replay-16.toml" -p gandiva --seed 2
! cmp -s "$scratch/out" <(sed -n 4p "$scratch/tiresias-16.csv") || fail "--seed changed nothing"
expect_exit 0 gpushare-place replay -t "$trace" -c "$data/replay-16.toml" -p exclusive --job-util 0.5
awk -F, '{ if ($11 * 2 - $10 > 1e-4 || $10 - $11 * 2 > 1e-4) exit 1 }' "$scratch/out" ||
  fail "--job-util 0.5: gpu_compute is not half of gpu_util: $(cat "$scratch/out")"

# --window 1: exclusive is strict FIFO, no small job passes a large one, so
# jobs wait longer on average than with the default window of 64.
expect_exit 0 gpushare-place replay -t "$trace" -c "$data/replay-16.toml" -p exclusive -f json \
  --window 1
fifo_wait=$(jq -r .avg_wait_s "$scratch/out")
window_wait=$(sed -n 2p "$scratch/tiresias-16.csv" | cut -d, -f6)
awk -v f="$fifo_wait" -v w="$window_wait" 'BEGIN { exit !(f > w) }' ||
  fail "--window 1: average wait $fifo_wait s is not above the default window's $window_wait s"
# frag_gpus measures something on this trace (its median request is larger
# than one GPU): free GPUs that the median request cannot use.
jq -e '.frag_gpus > 0' "$scratch/out" >/dev/null || fail "frag_gpus is 0: $(cat "$scratch/out")"

# --model: a heavier interference model slows the packing policy.
expect_exit 0 gpushare-place replay -t "$trace" -c "$data/replay-16.toml" -p gandiva \
  --model "$data/interference.txt"
slow=$(cut -d, -f2 "$scratch/out")
fast=$(sed -n 4p "$scratch/tiresias-16.csv" | cut -d, -f2)
awk -v s="$slow" -v f="$fast" 'BEGIN { exit !(s > f) }' || fail "--model: $slow is not above $fast"

# --quota-share 0: no quota, so every antman job is opportunistic.
expect_exit 0 gpushare-place replay -t "$trace" -c "$data/replay-16.toml" -p antman -f json \
  --quota-share 0
jq -e '.ot_jobs == 60' "$scratch/out" >/dev/null || fail "quota 0: $(cat "$scratch/out")"
# --queue-threshold turns waiting jobs opportunistic; --window 1 is FIFO.
expect_exit 0 gpushare-place replay -t "$trace" -c "$data/replay-16.toml" -p antman -f json \
  --queue-threshold 1s --window 1
jq -e '.conversions > 0' "$scratch/out" >/dev/null || fail "threshold: $(cat "$scratch/out")"

# --plot writes an SVG with one curve per policy.
expect_exit 0 gpushare-place replay -t "$trace" -c "$data/replay-16.toml" --plot cdf.svg
[ "$(grep -c '<polyline' cdf.svg)" = 4 ] || fail "cdf.svg: not four curves"
grep -q '>antman</text>' cdf.svg || fail "cdf.svg: no legend"

# Malformed rows are named, skipped and counted.
{ head -3 "$trace"; echo "99,x,1,1,m,1,1"; echo "98,1,1,1,m,1"; } >bad.csv
expect_exit 0 gpushare-place replay -t bad.csv -c "$data/replay-16.toml" -p exclusive
expect_grep "^gpushare-place: warning: bad.csv:4: unreadable value in '99,x,1,1,m,1,1'$" "$scratch/err"
expect_grep "^gpushare-place: warning: bad.csv:5: expected 7 fields, found 6$" "$scratch/err"
expect_grep "^gpushare-place: warning: bad.csv: 2 malformed rows skipped$" "$scratch/err"
expect_grep ",2$" "$scratch/out"   # the two good jobs

# Pollux workloads have no durations.
printf 'name,time,application,num_replicas,batch_size\ncifar10-0,53,cifar10,6,2048\n' >pollux.csv
expect_exit 2 gpushare-place replay -t pollux.csv -c "$data/replay-16.toml"
expect_grep "a Pollux workload has no job durations" "$scratch/err"

# A job larger than the cluster is an error naming it.
printf 'job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n0,1,0,1,m,10,1\n1,64,0,1,m,10,1\n' >big.csv
expect_exit 2 gpushare-place replay -t big.csv -c "$data/replay-16.toml" -p exclusive
expect_grep "^gpushare-place: error: .*replay-16.toml: job 1 asks for 64 GPUs; this cluster gives one job at most 16$" "$scratch/err"

# Usage errors.
expect_exit 2 gpushare-place replay -c "$data/replay-16.toml"
expect_grep "trace is required" "$scratch/err"
expect_exit 2 gpushare-place replay -t big.csv -c "$data/replay-16.toml" --policy fifo
expect_grep "fifo" "$scratch/err"
expect_exit 2 gpushare-place replay -t big.csv -c "$data/replay-16.toml" --queue-threshold 10
expect_grep "needs a unit" "$scratch/err"
printf 'beta = 3\n' >model.txt
expect_exit 2 gpushare-place replay -t "$trace" -c "$data/replay-16.toml" --model model.txt
expect_grep "^gpushare-place: error: model.txt:1: 'beta' must be a number from 0.000000 to 1.000000$" "$scratch/err"
