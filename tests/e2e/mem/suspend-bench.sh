#!/usr/bin/env bash
# bench/memory's suspend part runs (a smoke run: 1 GiB) and prints a result
# per kind of memory with the documented fields and the table: the job was
# suspended, suspend and resume took at least the link model's transfer
# time (they move every byte over it), and the data is intact; and what
# VMM backing costs many small allocations.
. "$(dirname "$0")/../common.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
bench="$libexec/bench/gpushare-bench-memory"
[ -x "$bench" ] || fail "gpushare-bench-memory is not installed"

expect_exit 0 "$bench" --sections suspend --suspend-sizes 1
jq -se '[.[] | select(.kind == "memory-suspend-result")] | length == 2
  and all(.[]; .size_gib == 1 and .data_ok and .state_after_suspend == "suspended"
          and .suspend_ms >= .transfer_ms and .resume_ms >= .transfer_ms)
  and ([.[].memory] | sort == ["managed", "plain"])' "$scratch/out" >/dev/null ||
  fail "results: $(cat "$scratch/out")"
jq -se '[.[] | select(.kind == "memory-suspend-table")][0].markdown
  | test("\\| plain \\| 1 \\|.*\\| intact \\|")' "$scratch/out" >/dev/null ||
  fail "no table: $(cat "$scratch/out")"
# VMM backing's cost: 512 allocations of 1 MiB charged 2 MiB each.
jq -se '[.[] | select(.kind == "memory-vmm-cost")][0]
  | .plain_charged_bytes == 536870912 and .suspendable_charged_bytes == 1073741824
    and .suspendable_alloc_ms_total > 0 and .plain_alloc_ms_total > 0' "$scratch/out" >/dev/null ||
  fail "no VMM cost: $(cat "$scratch/out")"
expect_exit 2 "$bench" --suspend-sizes 0
