#!/usr/bin/env bash
# bench/memory runs (a smoke run: a 1 GiB spill, uvm and gpushare) and
# prints a result per policy with the documented fields and the table; under
# gpushare the production allocation succeeds after a spill that took at
# least the link's transfer time, the memory comes back and the data is
# intact; the link is measured in the same run and the spill's transfer
# is no faster than it. Its share section (1 s windows, oom and gpushare): under oom the
# opportunistic job fails for want of memory, under gpushare it runs with its
# data intact and part of its memory on the host; both give the production
# job's rate and slowdown, and the table.
. "$(dirname "$0")/../common.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
bench="$libexec/bench/gpushare-bench-memory"
[ -x "$bench" ] || fail "gpushare-bench-memory is not installed"

expect_exit 0 "$bench" --sections spill --sizes 1 --policies uvm,gpushare
jq -se '[.[] | select(.kind == "memory-result")] | length == 2
  and all(.[]; .spill_gib == 1 and .data_ok and .alloc_result == "CUDA_SUCCESS"
          and .alloc_ms >= .transfer_ms)' "$scratch/out" >/dev/null ||
  fail "results: $(cat "$scratch/out")"
jq -se '[.[] | select(.kind == "memory-result" and .policy == "gpushare")][0].restore_ms
  | type == "number"' "$scratch/out" >/dev/null || fail "no restore time: $(cat "$scratch/out")"
# The link measured in the same run, and the spill's own transfer: a rate
# no faster than the link allows (5% for the measurement's noise).
jq -se '[.[] | select(.kind == "memory-result" and .policy == "gpushare")][0]
  | .link_gib_per_s > 0 and .link_to_device_gib_per_s > 0 and .copy_gib_per_s > 0
    and .spill_transfer_ms > 0 and .restore_transfer_ms > 0
    and .spill_transfer_gib_per_s <= .link_gib_per_s * 1.05
    and .restore_transfer_gib_per_s <= .link_to_device_gib_per_s * 1.05
    and (.spill_link_fraction | type == "number")' "$scratch/out" >/dev/null ||
  fail "link figures: $(cat "$scratch/out")"
jq -se '[.[] | select(.kind == "memory-table")][0].markdown | test("\\| gpushare \\| 1 \\|")' \
  "$scratch/out" >/dev/null || fail "no table: $(cat "$scratch/out")"
expect_exit 2 "$bench" --policies fastest

expect_exit 0 "$bench" --sections share --share-seconds 1 --policies oom,gpushare
jq -se '[.[] | select(.kind == "memory-share")] | length == 2 and
  (.[0] | .policy == "oom" and .opportunistic_status == "failed" and
   (.opportunistic_error | test("OUT_OF_MEMORY"))) and
  (.[1] | .policy == "gpushare" and .opportunistic_status == "ran" and .data_ok and
   .opportunistic_device_gib < 48) and
  all(.[]; (.production_slowdown | type == "number") and .production_iterations_per_s > 0)' \
  "$scratch/out" >/dev/null || fail "share results: $(cat "$scratch/out")"
jq -se '[.[] | select(.kind == "memory-share-table")][0].markdown | test("\\| gpushare \\|")' \
  "$scratch/out" >/dev/null || fail "no share table: $(cat "$scratch/out")"
expect_exit 2 "$bench" --sections everything
expect_exit 2 "$bench" --share-seconds 0
