#!/usr/bin/env bash
# The Philly trace ships compressed (tests/data/place/pollux-philly.csv.xz)
# and replays as docs/placement.md says: read through a pipe, all 82,247
# jobs, and on 128 GPUs (tiresias-n32g4.csv) the exclusive and yarn-cs
# policies give the average JCT and makespan of the table there.
. "$(dirname "$0")/../common.inc"
command -v xz >/dev/null || fail "xz is required (scripts/setup installs xz-utils)"
data="$GPUSHARE_SOURCE_DIR/tests/data/place"

xz -dc "$data/pollux-philly.csv.xz" >philly.csv
# A header and 82,247 jobs (and the blank last line of the original).
[ "$(grep -c . philly.csv)" -eq 82248 ] || fail "the trace has $(grep -c . philly.csv) lines, not 82,248"
[ "$(head -n 1 philly.csv)" = "timestamp,duration,num_gpus,gpu_time,cluster" ] ||
  fail "not the Philly trace's header: $(head -n 1 philly.csv)"

# millions COLUMN POLICY: the policy's COLUMN in millions, two decimals.
millions() {
  awk -F, -v column="$1" -v policy="$2" '
    NR == 1 { for (i = 1; i <= NF; i++) if ($i == column) c = i }
    $1 == policy { printf "%.2f\n", $c / 1e6 }' "$scratch/out"
}
for policy in exclusive yarn-cs; do
  expect_exit 0 gpushare-place replay -t <(xz -dc "$data/pollux-philly.csv.xz") \
    -c "$data/tiresias-n32g4.csv" -p "$policy" --header --queue-threshold 1h
  expect_grep ",82247$" "$scratch/out"
  cp "$scratch/out" "$policy.csv"
done
cp exclusive.csv "$scratch/out"
[ "$(millions avg_jct exclusive)" = 10.45 ] || fail "exclusive: $(cat exclusive.csv)"
[ "$(millions makespan exclusive)" = 28.94 ] || fail "exclusive: $(cat exclusive.csv)"
cp yarn-cs.csv "$scratch/out"
[ "$(millions avg_jct yarn-cs)" = 6.27 ] || fail "yarn-cs: $(cat yarn-cs.csv)"
[ "$(millions makespan yarn-cs)" = 29.59 ] || fail "yarn-cs: $(cat yarn-cs.csv)"
