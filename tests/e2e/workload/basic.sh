#!/usr/bin/env bash
# gpushare-workload on the simulated GPU: a record per iteration and a
# summary, with times that follow the kernels it ran (events measure at
# least the device's 3 x 2 ms, and no more than the wall time), memory that grows inside iterations, every
# allocation kind, and a checksum that verifies and is reproducible.
. "$(dirname "$0")/../common.inc"
use_sim
workload="$libexec/gpushare-workload"
[ -x "$workload" ] || fail "gpushare-workload is not installed in $libexec"

expect_exit 0 "$workload" --iterations 10 --kernels-per-iter 3 --kernel-us 2000 --per-iteration --label job1
[ "$(jq -s 'map(select(.kind=="workload-iteration")) | length' "$scratch/out")" = 10 ] ||
  fail "expected 10 iteration records"
jq -e -s 'all(.[]; .version == 1 and .label == "job1")' "$scratch/out" >/dev/null ||
  fail "records lack their version or label"
# The events around an iteration's kernels measure at least their 6 ms and
# never more than the iteration's wall time; the host's delays between
# launches (a loaded machine) count too, so "about 6 ms" is asked only of
# the median iteration.
jq -e 'select(.kind=="workload-iteration") | .gpu_ms >= 6 and .gpu_ms <= .iteration_ms + 0.01
       and .iteration_ms >= 6 and .mem_bytes == 268435456' "$scratch/out" | grep -q false &&
  { cat "$scratch/out"; fail "an iteration's times or memory are off"; }
jq -e -s 'map(select(.kind=="workload-iteration") | .gpu_ms) | sort | .[length / 2 | floor] < 10' \
  "$scratch/out" >/dev/null || { cat "$scratch/out"; fail "the median iteration's kernels took 10 ms or more"; }
summary=$(jq -c 'select(.kind=="workload-summary")' "$scratch/out")
echo "$summary" | jq -e '.iterations == 10 and .kernels == 30 and .peak_mem_bytes == 268435456
  and .verified_bytes == 67108864 and (.checksum | test("^[0-9a-f]{16}$"))
  and .iterations_per_s > 0 and .iterations_per_s <= 1000 / 6
  and .iteration_ms_mean >= 6 and .iteration_ms_p99 >= .iteration_ms_mean
  and .gpu_ms_total >= 60 and .gpu_ms_total <= .elapsed_ms + 0.1 and .elapsed_ms >= 60' >/dev/null ||
  fail "summary is off: $summary"
checksum=$(echo "$summary" | jq -r .checksum)

# Memory rises and falls within each iteration; the same data, the same checksum.
for alloc in plain managed async; do
  expect_exit 0 "$workload" --iterations 3 --kernels-per-iter 1 --kernel-us 100 --grow 512MiB \
    --alloc "$alloc" --per-iteration
  jq -e 'select(.kind=="workload-iteration") | .mem_bytes == 805306368' "$scratch/out" | grep -q false &&
    fail "$alloc: iterations did not hold the grown memory"
  [ "$(jq -r 'select(.kind=="workload-summary") | "\(.peak_mem_bytes) \(.checksum)"' "$scratch/out")" = \
    "805306368 $checksum" ] || fail "$alloc: peak memory or checksum differ: $(cat "$scratch/out")"
done

# The verified blocks cover the whole working set, however small.
expect_exit 0 "$workload" --mem 1000 --verify 1GiB --iterations 1
[ "$(jq -r .verified_bytes "$scratch/out")" = 1000 ] || fail "a 1000-byte working set was not verified whole"
expect_exit 0 "$workload" --mem 4GiB --verify 2MiB --iterations 1 --kernels-per-iter 0
[ "$(jq -r .verified_bytes "$scratch/out")" = 2097152 ] || fail "--verify 2MiB was not honoured"
