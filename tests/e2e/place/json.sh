#!/usr/bin/env bash
# gpushare-place prints one placement record per job, in input order, and
# the same input always gives the same output.
. "$(dirname "$0")/../common.inc"
data="$GPUSHARE_SOURCE_DIR/tests/data/place"

expect_exit 0 gpushare-place --cluster "$data/cluster.toml" --jobs "$data/jobs.jsonl"
cp "$scratch/out" "$scratch/placements.jsonl"
expect_golden place/placements.jsonl "$scratch/placements.jsonl"
[ ! -s "$scratch/err" ] || fail "stderr is not empty"

# stdin, and the cluster from the environment, give the same.
GPUSHARE_CLUSTER="$data/cluster.toml" gpushare-place <"$data/jobs.jsonl" >"$scratch/again"
cmp "$scratch/placements.jsonl" "$scratch/again" || fail "stdin run differs"

# Every record says what it is; placed jobs have node and gpus or nodes.
[ "$(jq -s 'length' "$scratch/again")" = "$(wc -l <"$data/jobs.jsonl")" ] || fail "record count"
jq -e -s 'all(.kind == "placement" and .version == 1)' "$scratch/again" >/dev/null ||
  fail "records without kind/version"
jq -e -s 'all(select(.status == "placed") | (.node != null and (.gpus | length) > 0)
              or ((.nodes | length) > 1))' "$scratch/again" >/dev/null || fail "placed without GPUs"

# An empty input is zero records, and success.
expect_exit 0 gpushare-place -c "$data/cluster.toml" </dev/null
[ ! -s "$scratch/out" ] || fail "empty input printed something"
