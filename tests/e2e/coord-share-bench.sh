#!/usr/bin/env bash
# bench/share runs (a short smoke run: one scenario, two policies, durations
# scaled down) and prints its records: solo speeds, one result per policy
# with the documented fields, and the Markdown table.
. "$(dirname "$0")/common.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
bench="$libexec/bench/gpushare-bench-share"
[ -x "$bench" ] || fail "gpushare-bench-share is not installed"

expect_exit 0 "$bench" --scenarios steady --policies none,gpushare --scale 0.25
jq -se '[.[] | select(.kind == "share-solo")] | length == 2' "$scratch/out" >/dev/null ||
  fail "no solo records: $(cat "$scratch/out")"
jq -se '[.[] | select(.kind == "share-result")] | length == 2
  and all(.[]; .scenario == "steady" and (.policy | IN("none", "gpushare"))
          and (.production_frac | type == "number") and (.harvest_frac | type == "number"))' \
  "$scratch/out" >/dev/null || fail "results lack fields: $(cat "$scratch/out")"
jq -se '[.[] | select(.kind == "share-table")][0].markdown | test("\\| steady \\| gpushare \\|")' \
  "$scratch/out" >/dev/null || fail "no table: $(cat "$scratch/out")"

expect_exit 2 "$bench" --policies fastest
expect_grep "unknown policy 'fastest'" "$scratch/err"
