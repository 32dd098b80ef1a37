#!/usr/bin/env bash
# The `node` install component (what scripts/demo builds and installs):
# exactly the node's programs, the simulated GPU, the workload and
# bench/share's scripts, and enough of them to run a job under gpushare-run
# on the simulated GPU, its memory limit enforced. Fails when an install
# rule the node needs lacks `COMPONENT node` (the demo would then miss a
# file), or when the component grows files a node does not need.
source "$(dirname "$0")/../common.inc"
: "${GPUSHARE_BUILD_DIR:?run through ctest}"

prefix=$scratch/node
cmake --install "$GPUSHARE_BUILD_DIR" --component node --prefix "$prefix" >/dev/null
(cd "$prefix" && find . -type f | sed 's|^\./||' | sort) >"$scratch/files"
cat >"$scratch/want" <<'LIST'
bin/gpushare-ctl
bin/gpushare-run
lib/gpushare/bench/fit-sim-cost
lib/gpushare/bench/gpushare-bench-share
lib/gpushare/bench/share-plot
lib/gpushare/gpushare-workload
lib/gpushare/libgpushare-audit.so
lib/gpushare/libgpushare-interpose.so
lib/gpushare/sim/libcuda.so.1
lib/gpushare/sim/libnvidia-ml.so.1
LIST
grep -v '^lib/gpushare/bench/traces/' "$scratch/files" >"$scratch/programs"
diff -u "$scratch/want" "$scratch/programs" || fail "the node component's programs differ from the list"
expect_grep '^lib/gpushare/bench/traces/resnet50-32\.csv$' "$scratch/files"

# A job from that prefix alone: an allocation within its limit works (the
# simulated context's 524 MiB counts too), one beyond it is refused.
PATH="$prefix/bin:/usr/bin:/bin"
workload=$prefix/lib/gpushare/gpushare-workload
expect_exit 0 gpushare-run --sim --opportunistic --mem-limit 2GiB -- "$workload" --mem 1GiB --iterations 2
expect_exit 1 gpushare-run --sim --opportunistic --mem-limit 2GiB -- "$workload" --mem 2GiB --iterations 1
expect_grep 'cuMemAlloc_v2\(2147483648 bytes\): CUDA_ERROR_OUT_OF_MEMORY' "$scratch/err"
