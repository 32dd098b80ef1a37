#!/usr/bin/env bash
# The interception check fails, and says why, when the interposer does not
# act: with GPUSHARE_DISABLE=1 the job sees the whole simulated GPU, can
# allocate past the limit, is unknown to the coordinator and nothing is
# wrapped. (The same check passes in e2e/gpu-check-sim.)
. "$(dirname "$0")/../common.inc"
command -v python3 >/dev/null || fail "python3 is required (scripts/setup installs it)"

export GPUSHARE_GPU_CHECK_PREFIX="$GPUSHARE_PREFIX" GPUSHARE_GPU_CHECK_SIM=1
export GPUSHARE_GPU_CHECK_SCRATCH="$scratch" PYTHONPATH="$GPUSHARE_SOURCE_DIR/tests/gpu"
export GPUSHARE_DISABLE=1
expect_exit 0 python3 "$GPUSHARE_SOURCE_DIR/tests/gpu/check_torch_interception.py"
jq -e '.kind == "gpu-check" and .name == "torch-interception" and .status == "failed"
       and .measurements.mem_get_info_total_bytes == 17179869184
       and .measurements.past_limit_raised == null' "$scratch/out" >/dev/null ||
  { cat "$scratch/out"; fail "the check did not fail as it should"; }
for why in "mem_get_info total 17179869184, expected 4294967296" \
           "NVML in the job \(libnvidia-ml.so.1\): total 17179869184" \
           "did not raise torch.OutOfMemoryError" \
           "not known to the coordinator" "no wrapped entry point"; do
  jq -r .summary "$scratch/out" | grep -Eq "$why" || fail "the summary does not say: $why"
done

# A guarded entry point bound at a legacy variant (the 32-bit cuMemAlloc of
# CUDA 3.0, through cuGetProcAddress) was once handed out unwrapped and named
# here as escaped; the interposer now wraps it, so the
# check finds nothing escaped. (The simulated driver does not implement the
# 32-bit ABI, so the stand-in's allocations fail and the check still fails.)
unset GPUSHARE_DISABLE
expect_exit 0 env GPUSHARE_STANDIN_CUDA_VERSIONS=cuMemAlloc=3000 \
  python3 "$GPUSHARE_SOURCE_DIR/tests/gpu/check_torch_interception.py"
jq -e '.measurements.escaped_entry_points == []
       and (.details.log | test("cuGetProcAddress\\(cuMemAlloc, 3000, 0\\): cuMemAlloc, wrapped"))
       and .measurements.mem_get_info_total_bytes == 4294967296' "$scratch/out" >/dev/null ||
  { cat "$scratch/out"; fail "the 32-bit cuMemAlloc was not wrapped"; }

# Without the scripts/gpu-check environment a check refuses to run.
unset GPUSHARE_GPU_CHECK_PREFIX
expect_exit 2 python3 "$GPUSHARE_SOURCE_DIR/tests/gpu/check_workload_spin.py"
expect_grep "run through scripts/gpu-check" "$scratch/err"
