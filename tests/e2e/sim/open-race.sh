#!/usr/bin/env bash
# A process that opens the simulated GPU's state file while others update
# it (here: four processes launching short kernels, so the scheduler model
# changes all the time) finds it sound: the check of an existing file is
# made under its lock, never between two writes of another process. Before
# that, some openings said "corrupt state (inconsistent scheduler model)"
# and cuInit failed with CUDA_ERROR_OPERATING_SYSTEM.
. "$(dirname "$0")/../common.inc"
use_sim
client="$libexec/tests/gpushare-cuda-client"

"$client" init >/dev/null || fail "the first client failed"
for i in 1 2 3 4; do
  "$client" init ctx launch:20000:20 sync >"$scratch/busy.$i" 2>&1 &
done
failed=0
for i in $(seq 400); do
  if ! "$client" init >"$scratch/open.out" 2>"$scratch/open.err"; then
    failed=$((failed + 1))
    cp "$scratch/open.err" "$scratch/failure.err"
  fi
done
wait
[ "$failed" -eq 0 ] || fail "$failed of 400 openings failed while others launched: $(cat "$scratch/failure.err")"
