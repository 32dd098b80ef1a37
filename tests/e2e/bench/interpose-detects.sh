#!/usr/bin/env bash
# The overhead bench (gpushare-bench-interpose), which the hook-overhead
# check of scripts/gpu-check runs, sees a cost where there is one: with a
# stand-in interposer whose hooks busy-wait before the driver's entry point
# (bench/interpose/slow_hook.c: 2 us a launch, 50 us an allocation), the
# low end of the paired rounds' 95% interval is at least 1 us per launch
# and 10 us per allocate+free (the hooks' cost, less what a loaded
# machine's noise can take off it), and the record is not within the
# simulator's budgets of 10 and 300 ns.
. "$(dirname "$0")/../common.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
bench="$libexec/bench/gpushare-bench-interpose"

LD_LIBRARY_PATH="$libexec/sim" expect_exit 0 "$bench" --iterations 20000 --repeats 9 \
  --interposer "$libexec/tests/libgpushare-test-slow-hook.so"
jq -e '.kind == "bench" and .name == "interpose-overhead" and .driver == "simulated"
       and .repeats == 9 and .budget_basis == "absolute (simulator)"
       and .launch_budget_ns == 10 and .alloc_budget_ns == 300
       and .launch_overhead_ns_low >= 1000 and .launch_overhead_ns >= .launch_overhead_ns_low
       and .launch_overhead_ns_high >= .launch_overhead_ns
       and .alloc_overhead_ns_low >= 10000 and .alloc_overhead_ns >= .alloc_overhead_ns_low
       and .within_budget == false' "$scratch/out" >/dev/null ||
  fail "the bench did not see the slow hooks: $(cat "$scratch/out" "$scratch/err")"
