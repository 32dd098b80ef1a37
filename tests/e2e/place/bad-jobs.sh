#!/usr/bin/env bash
# Unusable job records (malformed JSON, unknown tenant, too many GPUs, a
# negative size, a duplicate id, no id) are reported on stderr naming the
# record, printed as unplaced in their place, and the run exits 2; every
# other job is still placed.
. "$(dirname "$0")/../common.inc"
data="$GPUSHARE_SOURCE_DIR/tests/data/place"

cp "$data/bad-jobs.jsonl" "$scratch/jobs.jsonl"
expect_exit 2 gpushare-place -c "$data/cluster.toml" --jobs jobs.jsonl
cp "$scratch/out" "$scratch/bad-jobs.out"
cp "$scratch/err" "$scratch/bad-jobs.err"
expect_golden place/bad-jobs.out "$scratch/bad-jobs.out"
expect_golden place/bad-jobs.err "$scratch/bad-jobs.err"

# One record out per record in; the good ones placed.
[ "$(wc -l <"$scratch/bad-jobs.out")" = "$(wc -l <"$data/bad-jobs.jsonl")" ] || fail "record count"
jq -e -s '[.[] | select(.status == "placed") | .job] == ["ok-1", "ok-2"]' \
  "$scratch/bad-jobs.out" >/dev/null || fail "good jobs not placed"

# stdin is named "stdin".
expect_exit 2 gpushare-place -c "$data/cluster.toml" <"$data/bad-jobs.jsonl"
expect_grep "^gpushare-place: error: stdin: record 3: job 'who': unknown tenant 'marketing'" "$scratch/err"

# A jobs file that cannot be opened is a usage error.
expect_exit 2 gpushare-place -c "$data/cluster.toml" --jobs "$scratch/missing.jsonl"
expect_grep "^gpushare-place: error: $scratch/missing.jsonl: cannot open: No such file or directory$" "$scratch/err"
