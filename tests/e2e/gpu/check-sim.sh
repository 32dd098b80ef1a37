#!/usr/bin/env bash
# scripts/gpu-check --sim runs every check's logic against the simulated GPU
# and writes a report of the documented shape: gpushare-probe against the
# driver, the spin kernel's durations,
# interception (with a stand-in for PyTorch), hook overhead, co-location,
# the memory spill (with driver-API jobs), calibration next to the
# simulator's defaults; the training check skips (PyTorch cannot run on a
# simulated driver). GPUSHARE_GPU_CHECK_SIM=1 does the same. The
# coordinator is the one gpushare-run starts for users (the default socket,
# the default idle grace), and gpu-check stops it when it is done.
. "$(dirname "$0")/../common.inc"
command -v python3 >/dev/null || fail "python3 is required (scripts/setup installs it)"

gpu_check="$GPUSHARE_SOURCE_DIR/scripts/gpu-check"
out="$scratch/report"
# gpu-check's own scratch (and so its coordinator's socket) under this test's.
export TMPDIR="$scratch/tmp"
mkdir -p "$TMPDIR"
status=0
"$gpu_check" --sim --prefix "$GPUSHARE_PREFIX" "$out" >"$scratch/stdout" 2>"$scratch/stderr" ||
  status=$?
report="$out/report.json"
[ -f "$report" ] || { cat "$scratch/stderr"; fail "no report.json"; }

check() {  # NAME JQ-EXPRESSION: the check's record satisfies the expression
  jq -e --arg name "$1" ".checks[] | select(.name == \$name) | $2" "$report" >/dev/null ||
    { jq --arg name "$1" '.checks[] | select(.name == $name)' "$report"; fail "$1: not $2"; }
}

jq -e '.kind == "gpu-check-report" and .version == 1 and .mode == "sim"
       and .machine.gpu == "gpushare simulated GPU" and (.checks | length) == 10
       and ([.checks[].name] == ["probe-device", "workload-spin", "torch-interception",
                                 "torch-training", "hook-overhead", "colocation", "memory-spill",
                                 "suspend", "probe-memory", "calibration"])
       and .quick == false and .limit_s == 480 and .budget_s == 475
       and all(.checks[]; .kind == "gpu-check" and .version == 1
               and (.status | IN("passed", "failed", "skipped", "not-built"))
               and (.summary | length > 0) and (.duration_s | type == "number")
               and (.budget_s | type == "number") and (.over_budget | type == "boolean")
               and .evidence == .name + "/")
       and (.evidence_archive.bytes <= 16777216)' "$report" \
  >/dev/null || { cat "$report"; fail "the report is not of the documented shape"; }

# The exit status and the overall status follow the checks.
if jq -e 'any(.checks[]; .status == "failed")' "$report" >/dev/null; then
  [ "$status" -eq 1 ] && jq -e '.status == "failed"' "$report" >/dev/null ||
    fail "a check failed but gpu-check exited $status"
else
  [ "$status" -eq 0 ] && jq -e '.status == "passed"' "$report" >/dev/null ||
    { cat "$scratch/stderr"; fail "no check failed but gpu-check exited $status"; }
fi
expect_grep "^(passed|failed): .*summary\.md\)$" "$scratch/stdout"
# The coordinator that gpushare-run started for the checks is gone with them.
if pgrep -f -- "--socket $TMPDIR/gpushare-gpu-check\.[^ ]*/run/gpushare/gpushare.sock serve" \
  >/dev/null; then
  fail "gpu-check left its coordinator running: $(pgrep -af -- "$TMPDIR/gpushare-gpu-check")"
fi

check probe-device '.status == "passed" and .measurements.simulated == true
  and .measurements.mem_total_bytes == 17179869184 and .measurements.devices == 1'
# The simulator's spin kernel is exact, so this check must pass here.
check workload-spin '.status == "passed" and .measurements.kernel_1000us.samples == 55
  and (.measurements.kernel_1000us.median_us | . >= 1000 and . <= 1050)
  and (.measurements.kernel_10000us.median_us | . >= 10000 and . <= 10500)'
# Interception runs its job with the PyTorch stand-in (tests/gpu/standin),
# bound through cuGetProcAddress as the CUDA runtime binds.
check torch-interception '.status == "passed" and .details.torch_standin == true
  and .measurements.mem_get_info_total_bytes == 4294967296
  and .measurements.nvml_total_bytes == 4294967296
  and .measurements.past_limit_raised == "OutOfMemoryError"
  and .measurements.coordinator_mem_used_bytes >= .measurements.torch_reserved_bytes
  and .measurements.torch_reserved_bytes == 2684354560
  and .measurements.escaped_entry_points == [] and .measurements.wrapped_lines > 0'
check torch-training '.status == "skipped" and (.summary | test("simulated GPU"))'
# The verdict depends on the machine's noise (a loaded machine cannot tell
# 10 ns); the method and budgets do not: paired rounds, an interval around
# each median, the simulator's absolute budgets, and no PyTorch here.
check hook-overhead '(.status | IN("passed", "failed")) and .measurements.driver == "simulated"
  and .measurements.budget_basis == "absolute (simulator)" and .measurements.blocks >= 3
  and .measurements.repeats == 2 * .measurements.blocks
  and (.measurements.phase_s.bench > 0) and (.measurements.bench_child_s > 0)
  and .measurements.launch_budget_ns == 10 and .measurements.alloc_budget_ns == 300
  and (.measurements.launch_overhead_ns_low <= .measurements.launch_overhead_ns)
  and (.measurements.launch_overhead_ns <= .measurements.launch_overhead_ns_high)
  and (.measurements.alloc_overhead_ns_low <= .measurements.alloc_overhead_ns)
  and (.measurements.alloc_overhead_ns <= .measurements.alloc_overhead_ns_high)
  and (.measurements.torch_step | test("simulated GPU"))
  and (.summary | test("ns per launch \\(95% "))'
# The pairs (ResNet-50 and GPT-2 step timelines, the matrix-product pair)
# with gpushare-workload standing in for PyTorch (it starts as PyTorch does:
# host pauses inside its first bursts), in both start orders and both
# synchronisation patterns, beside the same pairs without gpushare:
# production protected, alone at its plain speed, and the opportunistic job
# harvesting in every order and pattern, at least 0.3 of what it gets
# without gpushare (one locked out beside a busy production job gets 0, as
# on the real GPU); the verdict follows the targets (0.6, which a loaded
# machine's noise may miss).
check colocation '(.status | IN("passed", "failed")) and .measurements.jobs == "gpushare-workload"
  and .measurements.sync_patterns == [1, 5]
  and all(.measurements.resnet, .measurements.gpt2, .measurements.matmul;
          .production_fraction >= 0.9 and .alone_fraction >= 0.9 and .window_s > 2
          and (.orders | keys) == ["opportunistic_first", "production_first"]
          and all(.orders[]; all(.opportunistic_of_without_gpushare[]; . >= 0.3)
                  and (.gpushare.harvest_of_free_exact | type) == "number"))
  and ((.status == "failed") == (.summary | test("below target")))'
# Production gets three quarters of the (1.5 GiB) simulated GPU beside an
# opportunistic job holding a third, which spills; refused without gpushare.
check memory-spill '.status == "passed" and .measurements.jobs == "cuda-client"
  and .measurements.production_without_gpushare == "refused (CUDA_ERROR_OUT_OF_MEMORY)"
  and .measurements.production_allocated == true and .measurements.opportunistic_intact == true
  and .measurements.spilled_bytes >= (.measurements.opportunistic_bytes
    + .measurements.production_bytes + 2 * 134217728 - .measurements.device_bytes)
  and (.measurements.spill_gib_per_s > 0) and (.measurements.production_speed_fraction > 0)'
# The checks of the memory work, registered before their files exist.
for name in suspend probe-memory; do
  check $name '(.status | IN("passed", "failed", "skipped"))'
  [ -f "$GPUSHARE_SOURCE_DIR/tests/gpu/check_${name//-/_}.py" ] ||
    check $name '.status == "skipped" and (.summary | test("not in this tree"))'
done
# The calibration's context memory is the simulator's own setting, measured.
check calibration '.status == "passed"
  and .measurements.context_memory_bytes.measured == 549453824
  and .measurements.context_memory_bytes.sim_default == 549453824
  and .measurements.time_slice_ms.measured == null
  and (.measurements.h2d_gb_per_s.measured | . > 0)
  and .measurements.h2d_gb_per_s.sim_default == 51
  and .measurements.h2d_gb_per_s.sim_setting == "GPUSHARE_SIM_PCIE_GBPS"
  and .measurements.time_slice_ms.sim_default == 2
  and .measurements.context_switch_us.sim_default == 151
  and (.measurements.launch_us.measured | . > 0)
  and (.details.time_slices.error | test("simulated GPU"))
  and .details.sim_settings.GPUSHARE_SIM_CTX_OVERHEAD == "549453824"
  and (.details.sim_settings.GPUSHARE_SIM_PCIE_GBPS | test("^[0-9]+\\.[0-9]$"))
  and (.details.sim_settings | has("GPUSHARE_SIM_MIGRATE_BANDWIDTH") | not)
  and (.details.defaults_differ | type == "array")'

expect_grep '^\| calibration \| passed \|' "$out/summary.md"
expect_grep '^export GPUSHARE_SIM_CTX_OVERHEAD=549453824 GPUSHARE_SIM_PCIE_GBPS=[0-9]+\.[0-9]$' \
  "$out/summary.md"
expect_grep '^\| measurement \| measured \| sim_default \| sim_setting \|$' "$out/summary.md"
expect_grep '^\| context_memory_bytes \| 549453824 \| 549453824 \| GPUSHARE_SIM_CTX_OVERHEAD \|$' \
  "$out/summary.md"

# The environment variable selects the same mode; --only runs what it names.
expect_exit 0 env GPUSHARE_GPU_CHECK_SIM=1 "$gpu_check" --prefix "$GPUSHARE_PREFIX" \
  --only memory-spill,workload-spin "$scratch/env"
jq -e '.mode == "sim" and .status == "passed"
       and [.checks[].name] == ["workload-spin", "memory-spill"]' "$scratch/env/report.json" \
  >/dev/null || fail "GPUSHARE_GPU_CHECK_SIM=1 --only did not run the two checks on the simulator"

# The calibration names a default that differs from what it measured: here
# the simulated GPU's contexts are made to take 1048 MiB, twice the default.
expect_exit 0 env GPUSHARE_SIM_CTX_OVERHEAD=1098907648 "$gpu_check" --sim --prefix \
  "$GPUSHARE_PREFIX" --only calibration "$scratch/ctx"
jq -e '.checks[0] | .status == "passed"
       and .measurements.context_memory_bytes.measured == 1098907648
       and .details.sim_settings.GPUSHARE_SIM_CTX_OVERHEAD == "1098907648"
       and (.details.defaults_differ | index("GPUSHARE_SIM_CTX_OVERHEAD 549453824 (measured 1098907648)"))
       and (.summary | test("defaults off by more than 25%: GPUSHARE_SIM_CTX_OVERHEAD 549453824"))' \
  "$scratch/ctx/report.json" >/dev/null ||
  fail "the calibration did not name the context default: $(jq -c '.checks[0]' "$scratch/ctx/report.json")"
jq -e '.checks[] | select(.name == "calibration") | .details.defaults_differ
       | all(.[]; startswith("GPUSHARE_SIM_CTX_OVERHEAD") | not)' "$report" >/dev/null ||
  fail "the default context memory was called off on the default simulator"

# What only a real GPU runs (the training loop) is at least valid Python.
python3 -c 'import py_compile, sys
for path in sys.argv[2:]:
    py_compile.compile(path, cfile=sys.argv[1], doraise=True)' "$scratch/compiled.pyc" \
  "$GPUSHARE_SOURCE_DIR"/tests/gpu/*.py "$GPUSHARE_SOURCE_DIR/scripts/gpu-check" ||
  fail "a program in tests/gpu does not compile"
