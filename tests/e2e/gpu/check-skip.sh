#!/usr/bin/env bash
# scripts/gpu-check where there is no NVIDIA GPU: exit 0, "skipped: no
# NVIDIA GPU" on stdout, nothing built, and report.json and summary.md saying
# so. The simulated driver on the loader's path is not taken for a GPU.
. "$(dirname "$0")/../common.inc"
command -v python3 >/dev/null || fail "python3 is required (scripts/setup installs it)"

gpu_check="$GPUSHARE_SOURCE_DIR/scripts/gpu-check"
# This test is for machines without a GPU; on one with a GPU it has nothing to prove.
if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q GPU; then
  skip "this machine has an NVIDIA GPU"
fi

check_skipped() {  # OUTDIR
  expect_grep '^skipped: no NVIDIA GPU$' "$scratch/out"
  [ "$(wc -l <"$scratch/out")" -eq 1 ] || fail "stdout has more than the skip line"
  jq -e '.kind == "gpu-check-report" and .version == 1 and .status == "skipped"
         and .reason == "no NVIDIA GPU" and .mode == "real" and .checks == []' "$1/report.json" \
    >/dev/null || fail "$1/report.json does not say skipped: $(cat "$1/report.json")"
  expect_grep '^- status: \*\*skipped\*\* \(no NVIDIA GPU\)$' "$1/summary.md"
  expect_grep '^No check ran\.$' "$1/summary.md"
}

# A build directory that does not exist: the skip path must not build.
export GPUSHARE_BUILD_DIR="$scratch/no-build"
expect_exit 0 "$gpu_check" "$scratch/report"
check_skipped "$scratch/report"
[ ! -e "$GPUSHARE_BUILD_DIR" ] || fail "the skip path built something"

# The simulated driver found as libcuda.so.1 is not a GPU.
expect_exit 0 env LD_LIBRARY_PATH="$libexec/sim" "$gpu_check" "$scratch/report-sim-path"
check_skipped "$scratch/report-sim-path"

# Usage errors: exit 2 with a message and a hint; no report written.
expect_exit 2 "$gpu_check"
expect_grep '^gpu-check: error: OUTDIR is required$' "$scratch/err"
expect_grep "^Try 'scripts/gpu-check --help'" "$scratch/err"
expect_exit 2 "$gpu_check" --only nope "$scratch/x"
expect_grep "unknown check 'nope'" "$scratch/err"
expect_exit 2 "$gpu_check" --prefix "$scratch" "$scratch/x"
expect_grep "not a gpushare install" "$scratch/err"
expect_exit 2 "$gpu_check" --bogus "$scratch/x"
[ ! -e "$scratch/x/report.json" ] || fail "a usage error wrote a report"
echo "mkdir" >"$scratch/file"
expect_exit 2 "$gpu_check" "$scratch/file"
expect_grep "gpu-check: error: $scratch/file" "$scratch/err"

expect_exit 0 "$gpu_check" --list
[ "$(wc -l <"$scratch/out")" -eq 10 ] || fail "--list does not list the ten checks"
