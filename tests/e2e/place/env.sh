#!/usr/bin/env bash
# --format env prints shell assignments for one job, so
# eval "$(gpushare-place -f env ...)" sets up its environment.
. "$(dirname "$0")/../common.inc"
data="$GPUSHARE_SOURCE_DIR/tests/data/place"

env_text=$(gpushare-place -c "$data/cluster.toml" -f env <"$data/one-job.jsonl")
eval "$env_text"
[ "$CUDA_VISIBLE_DEVICES" = 2 ] || fail "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"
[ "$GPUSHARE_QOS" = opportunistic ] || fail "GPUSHARE_QOS=$GPUSHARE_QOS"
[ "$GPUSHARE_JOB" = notebook ] || fail "GPUSHARE_JOB=$GPUSHARE_JOB"
[ "$GPUSHARE_MEM_LIMIT" = 2147483648 ] || fail "GPUSHARE_MEM_LIMIT=$GPUSHARE_MEM_LIMIT"
[ "$GPUSHARE_NODE" = n1 ] || fail "GPUSHARE_NODE=$GPUSHARE_NODE"
# Exported, so the job's own process sees them.
[ "$(sh -c 'echo $GPUSHARE_QOS')" = opportunistic ] || fail "not exported"

# A production job gets no memory limit from placement.
echo '{"id":"p","tenant":"vision","gpus":2,"class":"production"}' |
  gpushare-place -c "$data/cluster.toml" -f env >"$scratch/prod"
expect_grep '^export CUDA_VISIBLE_DEVICES=2,3$' "$scratch/prod"
expect_grep '^export GPUSHARE_QOS=production$' "$scratch/prod"
if grep -q MEM_LIMIT "$scratch/prod"; then fail "production job got a memory limit"; fi

# A job that is not placed prints nothing and fails, so eval is skipped.
echo '{"id":"big","tenant":"nlp","gpus":5,"mem_bytes":42949672960,"class":"production"}' >"$scratch/big"
expect_exit 1 gpushare-place -c "$data/cluster.toml" -f env --jobs "$scratch/big"
[ ! -s "$scratch/out" ] || fail "printed assignments for a job not placed"
expect_grep "^gpushare-place: error: job 'big' is reserved: " "$scratch/err"

# Exactly one job.
cat "$data/one-job.jsonl" "$data/one-job.jsonl" >"$scratch/two"
expect_exit 2 gpushare-place -c "$data/cluster.toml" -f env --jobs "$scratch/two"
expect_grep "more than one job \(--format env takes exactly one\)" "$scratch/err"
[ ! -s "$scratch/out" ] || fail "printed something for two jobs"
expect_exit 2 gpushare-place -c "$data/cluster.toml" -f env </dev/null
expect_grep "no job to place" "$scratch/err"
echo '{"id":"x","tenant":"nobody"}' >"$scratch/bad"
expect_exit 2 gpushare-place -c "$data/cluster.toml" -f env --jobs "$scratch/bad"
expect_grep "unknown tenant 'nobody'" "$scratch/err"
