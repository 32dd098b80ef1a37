#!/usr/bin/env bash
# bench/memory runs (a smoke run: a 1 GiB spill, uvm and gpushare) and
# prints a result per policy with the documented fields and the table; under
# gpushare the production allocation succeeds after a spill that took at
# least the link's transfer time, the memory comes back and the data is
# intact.
. "$(dirname "$0")/common.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
bench="$libexec/bench/gpushare-bench-memory"
[ -x "$bench" ] || fail "gpushare-bench-memory is not installed"

expect_exit 0 "$bench" --sizes 1 --policies uvm,gpushare --suspend-sizes none
jq -se '[.[] | select(.kind == "memory-result")] | length == 2
  and all(.[]; .spill_gib == 1 and .data_ok and .alloc_result == "CUDA_SUCCESS"
          and .alloc_ms >= .transfer_ms)' "$scratch/out" >/dev/null ||
  fail "results: $(cat "$scratch/out")"
jq -se '[.[] | select(.kind == "memory-result" and .policy == "gpushare")][0].restore_ms
  | type == "number"' "$scratch/out" >/dev/null || fail "no restore time: $(cat "$scratch/out")"
jq -se '[.[] | select(.kind == "memory-table")][0].markdown | test("\\| gpushare \\| 1 \\|")' \
  "$scratch/out" >/dev/null || fail "no table: $(cat "$scratch/out")"
expect_exit 2 "$bench" --policies fastest
