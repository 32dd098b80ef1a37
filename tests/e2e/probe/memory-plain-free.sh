#!/usr/bin/env bash
# gpushare-probe memory on a workload whose activations are plain device
# memory freed with cuMemFree behind the iteration's kernels (a 1 GiB
# working set, 512 MiB more each iteration, 4 x 2 ms of kernels, 3 ms on
# the host). The simulated driver's cuMemFree waits for the work queued
# before it, as the real one does, so the activations live while the
# kernels run and the probe sees them: a ceiling 1.5 GiB above the
# context's own memory, the floor 1 GiB above it. (When the simulator's
# free returned at once, the activations lived for microseconds and the
# ceiling equalled the floor.)
. "$(dirname "$0")/../common.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
workload="$libexec/gpushare-workload"

expect_exit 0 gpushare-probe memory --sim --summary -- "$workload" \
  --mem 1GiB --grow 512MiB --alloc plain --kernel-us 2000 --host-us 3000 --iterations 150
profile=$(jq -c 'select(.kind == "memory-profile")' "$scratch/out")
echo "$profile" | jq -e '
  (1024 * 1024 * 1024) as $gib
  | .context_mem_bytes > 0
  and ((.floor_mem_bytes - .context_mem_bytes) / $gib - 1 | fabs) < 0.05
  and ((.ceiling_mem_bytes - .context_mem_bytes) / $gib - 1.5 | fabs) < 0.05
  and .peak_mem_bytes >= .ceiling_mem_bytes' >/dev/null ||
  fail "profile $profile: want a floor of 1 GiB and a ceiling of 1.5 GiB above the context"
echo "probe-memory-plain-free: ok"
