#!/usr/bin/env bash
# The probe feeds placement with no glue: `gpushare-probe node` prints this
# machine as a cluster gpushare-place reads, and a memory profile is a job
# record (its mem_bytes and util) that gpushare-place places.
. "$(dirname "$0")/../common.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
export GPUSHARE_SIM_DEVICES=2 GPUSHARE_SIM_MEMORY=8GiB,2GiB
workload="$libexec/gpushare-workload"

expect_exit 0 gpushare-probe node --sim --name here --window 200ms
cp "$scratch/out" "$scratch/cluster.toml"
expect_grep '^\[\[node\]\]$' "$scratch/cluster.toml"
expect_grep '^name = "here"$' "$scratch/cluster.toml"
expect_grep '^mem_bytes = 8589934592$' "$scratch/cluster.toml"
expect_grep '^mem_bytes = 2147483648$' "$scratch/cluster.toml"
expect_grep '^util = 0\.000$' "$scratch/cluster.toml"
expect_grep '^default_tenant = ' "$scratch/cluster.toml"

# A 3 GiB job fits only on GPU 0 (8 GiB), whatever the tie-breaks.
gpushare-probe memory --sim --summary -- "$workload" --mem 3GiB --iterations 20 2>/dev/null |
  gpushare-place --cluster "$scratch/cluster.toml" >"$scratch/placed" ||
  fail "the pipeline failed"
jq -e '.kind == "placement" and .status == "placed" and .job == "gpushare-workload"
  and .node == "here" and .gpus == [0]' "$scratch/placed" >/dev/null ||
  { cat "$scratch/placed"; fail "the profiled job was not placed on the GPU that fits it"; }

# Memory held and time used by another job show in the next node record.
LD_LIBRARY_PATH="$libexec/sim" "$workload" --mem 1GiB --kernel-us 20000 --duration 5 \
  >/dev/null 2>&1 &
for _ in $(seq 200); do
  gpushare-probe device --sim | jq -e -s '.[0].mem_used_bytes > 1073741824' \
    >/dev/null && break
  sleep 0.05
done
expect_exit 0 gpushare-probe node --sim --fragment --name busy --window 500ms
kill %1 2>/dev/null || true
wait || true
grep -q '^\[policy\]' "$scratch/out" && fail "--fragment printed a policy"
# Back to back 20 ms kernels: busy most of the window (kernels count as
# they settle, so a window's edges can miss part of one).
awk '/^util = / { print $3; exit }' "$scratch/out" | grep -Eq '^0\.[5-9][0-9]*$|^1\.000$' ||
  { cat "$scratch/out"; fail "a busy GPU does not show its utilisation"; }
awk '/^mem_used_bytes = / { print $3; exit }' "$scratch/out" | grep -Eq '^[0-9]{10,}$' ||
  fail "the memory another job holds does not show"

expect_exit 2 gpushare-probe node --sim --window soon
expect_grep '^gpushare-probe: error: --window: ' "$scratch/err"
