#!/usr/bin/env bash
# bench/share runs (a short smoke run: one scenario, two policies, durations
# scaled down) and prints its records: solo speeds, one result per policy
# with the documented fields, and the Markdown table; with --records it
# keeps each run's per-iteration records, which share-plot draws as SVG
# (one line per job).
. "$(dirname "$0")/../common.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
bench="$libexec/bench/gpushare-bench-share"
[ -x "$bench" ] || fail "gpushare-bench-share is not installed"

expect_exit 0 "$bench" --scenarios steady --policies none,gpushare --scale 0.25 \
  --records "$scratch/records"
jq -se '[.[] | select(.kind == "share-solo")] | length == 2' "$scratch/out" >/dev/null ||
  fail "no solo records: $(cat "$scratch/out")"
jq -se '[.[] | select(.kind == "share-result")] | length == 2
  and all(.[]; .scenario == "steady" and (.policy | IN("none", "gpushare"))
          and (.production_frac | type == "number") and (.harvest_frac | type == "number"))' \
  "$scratch/out" >/dev/null || fail "results lack fields: $(cat "$scratch/out")"
jq -se '[.[] | select(.kind == "share-table")][0].markdown | test("\\| steady \\| gpushare \\|")' \
  "$scratch/out" >/dev/null || fail "no table: $(cat "$scratch/out")"

# The plot: one panel per file, one polyline per job, well-formed XML.
for p in none gpushare; do
  [ -s "$scratch/records/steady-$p.jsonl" ] || fail "no records kept for steady-$p"
done
cp "$scratch/out" "$scratch/bench.out"
expect_exit 0 "$libexec/bench/share-plot" "$scratch/records/steady-none.jsonl" \
  "$scratch/records/steady-gpushare.jsonl"
grep -q '^<svg ' "$scratch/out" && tail -n 1 "$scratch/out" | grep -qx '</svg>' ||
  fail "share-plot did not write an SVG document: $(head -c 300 "$scratch/out")"
[ "$(grep -c '<polyline ' "$scratch/out")" = 4 ] || fail "expected 2 panels of 2 jobs"
for label in steady-none steady-gpushare prod opp; do
  grep -q ">$label</text>" "$scratch/out" || fail "the plot does not name $label"
done
expect_exit 1 "$libexec/bench/share-plot" "$scratch/missing.jsonl"
expect_grep "cannot read" "$scratch/err"

expect_exit 2 "$bench" --policies fastest
expect_grep "unknown policy 'fastest'" "$scratch/err"
