#!/usr/bin/env bash
# The memory-spill check (tests/gpu/check_memory_spill.py) fails, and says
# why, when what it checks is broken, on the simulated GPU: with
# GPUSHARE_SPILL=off the opportunistic job's memory stays on the device and
# production does not get its memory; with a client whose device-to-host
# copies are corrupted (tests/clients/corrupt_copy.c, preloaded ahead of the
# interposer in the opportunistic job only) its data does not come back
# intact. (The same check passes in e2e/gpu-check-sim.)
. "$(dirname "$0")/../common.inc"
command -v python3 >/dev/null || fail "python3 is required (scripts/setup installs it)"
check="$GPUSHARE_SOURCE_DIR/tests/gpu/check_memory_spill.py"
export GPUSHARE_GPU_CHECK_SIM=1 PYTHONPATH="$GPUSHARE_SOURCE_DIR/tests/gpu"

run_check() {  # PREFIX SCRATCH: the check's record in $scratch/out
  mkdir -p "$2"
  GPUSHARE_GPU_CHECK_PREFIX="$1" GPUSHARE_GPU_CHECK_SCRATCH="$2" \
    expect_exit 0 python3 "$check"
}
expect_failed() {  # WHY: the record says failed, for this reason
  jq -e '.kind == "gpu-check" and .name == "memory-spill" and .status == "failed"' \
    "$scratch/out" >/dev/null || { cat "$scratch/out" "$scratch/err"; fail "did not fail: $1"; }
  jq -r .summary "$scratch/out" | grep -Eq "$1" ||
    fail "the summary does not say '$1': $(jq -r .summary "$scratch/out")"
}

# Spill off: production is refused, as it is without gpushare.
GPUSHARE_SPILL=off run_check "$GPUSHARE_PREFIX" "$scratch/off"
expect_failed "production did not get its memory \(CUDA_ERROR_OUT_OF_MEMORY\)"
jq -e '.measurements.production_without_gpushare == "refused (CUDA_ERROR_OUT_OF_MEMORY)"' \
  "$scratch/out" >/dev/null || fail "the pair without gpushare was not refused: $(cat "$scratch/out")"

# A corrupting opportunistic client: a prefix whose gpushare-cuda-client
# preloads the corrupting library ahead of the interposer when it runs the
# opportunistic job's steps (the one that checks seed 7).
fake="$scratch/prefix"
mkdir -p "$fake/lib/gpushare/tests"
ln -s "$GPUSHARE_PREFIX/bin" "$fake/bin"
for entry in "$libexec"/*; do
  [ "$(basename "$entry")" = tests ] || ln -s "$entry" "$fake/lib/gpushare/"
done
for entry in "$libexec"/tests/*; do
  [ "$(basename "$entry")" = gpushare-cuda-client ] || ln -s "$entry" "$fake/lib/gpushare/tests/"
done
cat >"$fake/lib/gpushare/tests/gpushare-cuda-client" <<SH
#!/bin/sh
case " \$* " in
  *" check:7 "*) LD_PRELOAD="$libexec/tests/libgpushare-test-corrupt-copy.so\${LD_PRELOAD:+:\$LD_PRELOAD}"
                 export LD_PRELOAD ;;
esac
exec "$libexec/tests/gpushare-cuda-client" "\$@"
SH
chmod +x "$fake/lib/gpushare/tests/gpushare-cuda-client"
run_check "$fake" "$scratch/corrupt"
expect_failed "the opportunistic job's data did not survive the spill"
jq -e '.measurements.production_allocated == true and .measurements.opportunistic_intact == false' \
  "$scratch/out" >/dev/null || fail "not the corrupted data alone: $(cat "$scratch/out")"
