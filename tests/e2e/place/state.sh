#!/usr/bin/env bash
# --state-out writes the cluster after placement as a cluster file: placing
# jobs in two runs through it gives what one run gives.
. "$(dirname "$0")/../common.inc"
data="$GPUSHARE_SOURCE_DIR/tests/data/place"

# One run with every job, against two runs with the state in between. A
# job that ends reserved in the first run comes back in the second.
late='{"id":"late","tenant":"nlp","gpus":3,"mem_bytes":42949672960,"class":"production"}'
{ head -n 1 "$data/jobs.jsonl"; echo "$late"; tail -n +2 "$data/jobs.jsonl"; echo "$late"; } >"$scratch/all"
head -n 4 "$scratch/all" >"$scratch/first"
tail -n +5 "$scratch/all" >"$scratch/second"

expect_exit 0 gpushare-place -c "$data/cluster.toml" --state-out "$scratch/whole.toml" --jobs "$scratch/all"
cp "$scratch/out" "$scratch/one-run"
expect_exit 0 gpushare-place -c "$data/cluster.toml" -s "$scratch/mid.toml" --jobs "$scratch/first"
cp "$scratch/out" "$scratch/two-runs"
expect_exit 0 gpushare-place -c "$scratch/mid.toml" -s "$scratch/end.toml" --jobs "$scratch/second"
cat "$scratch/out" >>"$scratch/two-runs"
cmp "$scratch/one-run" "$scratch/two-runs" || fail "two runs through the state differ from one"
cmp "$scratch/whole.toml" "$scratch/end.toml" || fail "final states differ"

# The reservation is in the state, and the second 'late' got it back.
jq -e -s '[.[] | select(.job == "late") | .status] == ["reserved", "reserved"]' \
  "$scratch/one-run" >/dev/null || fail "expected 'late' reserved twice (nothing freed)"
expect_grep '^reservation = \{ job = "late", tenant = "nlp" \}$' "$scratch/whole.toml"
expect_grep '^id = "resnet-a"$' "$scratch/whole.toml"

# The state is itself a valid cluster, and writing it again changes nothing.
expect_exit 0 gpushare-place -c "$scratch/end.toml" -s "$scratch/again.toml" </dev/null
cmp "$scratch/end.toml" "$scratch/again.toml" || fail "state not stable"

# A state that cannot be written is a run-time failure (1), after the
# placements were printed.
expect_exit 1 gpushare-place -c "$data/cluster.toml" -s "$scratch/no/such/dir/s.toml" --jobs "$scratch/first"
expect_grep "^gpushare-place: error: $scratch/no/such/dir/s.toml: cannot write: No such file or directory$" "$scratch/err"
[ "$(wc -l <"$scratch/out")" = 4 ] || fail "placements not printed"
