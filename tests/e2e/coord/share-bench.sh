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

# Each job's speed alone, dashed in its colour; and a job that stops a
# little into a bin is drawn over the part of the bin it ran, not as a
# fall toward 0: eleven steps 100 ms apart (10 it/s; bins of 12 and 8),
# the last alone at the very start of a bin of 250 ms (drawn as 4 it/s before).
records="$scratch/even.jsonl"
for i in $(seq 0 10); do
  printf '{"kind":"workload-iteration","label":"even","t_ms":%d}\n' $((1000 + 100 * i))
done >"$records"
expect_exit 0 "$libexec/bench/share-plot" --solo even=10 "$records"
[ "$(grep -c 'stroke-dasharray' "$scratch/out")" = 1 ] || fail "no dashed line for the job alone"
grep -q '>dashed: alone</text>' "$scratch/out" || fail "the dashed line is not named"
points=$(grep -o '<polyline [^>]*points="[^"]*"' "$scratch/out" | sed 's/.*points="//; s/"$//')
# The panel's bottom is y = 218 and its top 28 at 1.1 x 12 it/s: a point
# below 6 it/s (y > 131) is a partial bin drawn as a full one.
echo "$points" | tr ' ' '\n' | awk -F, 'NF == 2 && $2 + 0 > 131 { bad = 1 } END { exit bad }' ||
  fail "the job falls toward 0 in its last, partial bin: $points"
expect_exit 2 "$libexec/bench/share-plot" --solo even "$records"
expect_grep "wants LABEL=RATE" "$scratch/err"

expect_exit 2 "$bench" --policies fastest
expect_grep "unknown policy 'fastest'" "$scratch/err"
expect_exit 2 "$bench" --pace later
expect_grep "\-\-pace: 'later' is not host or schedule" "$scratch/err"
