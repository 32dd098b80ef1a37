#!/usr/bin/env bash
# --explain says, per job, how its class was decided, which rule chose its
# GPUs, and why every other GPU was rejected.
. "$(dirname "$0")/../common.inc"
data="$GPUSHARE_SOURCE_DIR/tests/data/place"

expect_exit 0 gpushare-place -c "$data/cluster.toml" --explain --jobs "$data/jobs.jsonl"
jq . "$scratch/out" >"$scratch/explained.json"
expect_golden place/explained.json "$scratch/explained.json"

# Explaining does not change where jobs go.
gpushare-place -c "$data/cluster.toml" <"$data/jobs.jsonl" >"$scratch/plain"
jq -c 'del(.explain)' "$scratch/out" | cmp - "$scratch/plain" || fail "--explain changed placements"

# Every GPU of the cluster is either chosen or rejected, for every job.
total=$(grep -c '^\[\[node.gpu\]\]' "$data/cluster.toml")
jq -e --argjson total "$total" '
  ([.gpus // [], (.nodes // [] | map(.gpus) | add // [])] | add | length) as $chosen
  | ([.explain.rejected[].gpus | length] | add // 0) as $rejected
  | .status != "placed" or $chosen + $rejected == $total' "$scratch/out" >/dev/null ||
  fail "a GPU is neither chosen nor rejected"

# A refusal over quota is explained without looking at GPUs.
echo '{"id":"greedy","tenant":"vision","gpus":5,"class":"production"}' |
  gpushare-place -c "$data/cluster.toml" --explain >"$scratch/refused"
expect_grep '"status":"unplaced"' "$scratch/refused"
expect_grep '"class":"over quota: tenant .vision. holds 0 of its 4 quota GPUs and the job needs 5"' "$scratch/refused"
