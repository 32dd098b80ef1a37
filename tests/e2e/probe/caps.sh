#!/usr/bin/env bash
# gpushare-probe memory --caps: the job's speed under each memory cap, run
# one after another. A cap of its whole profile runs at its uncapped speed;
# a cap below its working set fails today (no spill to the host yet), and
# the record says so instead of the probe failing.
. "$(dirname "$0")/../common.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
workload="$libexec/gpushare-workload"

expect_exit 0 gpushare-probe memory --sim --caps 40%,100%,2GiB --plot "$scratch/caps.svg" -- \
  "$workload" --mem 1GiB --grow 256MiB --alloc async --kernel-us 2000 --host-us 3000 \
  --iterations 80
jq -e -s '[.[] | select(.kind == "memory-cap")] | length == 3' "$scratch/out" >/dev/null ||
  fail "not one record per cap"
profile=$(jq -c 'select(.kind == "memory-profile")' "$scratch/out")
mem=$(echo "$profile" | jq '.mem_bytes')

jq -e -s --argjson mem "$mem" '.[] | select(.kind == "memory-cap" and .cap == "40%")
  | .mem_limit_bytes == ($mem * 40 / 100 | floor) and .completed == false
  and .exit_status != 0 and .iterations_per_s == null
  and (.note | test("CUDA_ERROR_OUT_OF_MEMORY"))' "$scratch/out" >/dev/null ||
  fail "the 40% cap did not fail as documented"
expect_grep 'CUDA_ERROR_OUT_OF_MEMORY' "$scratch/err"

for cap in 100% 2GiB; do
  jq -e -s --arg cap "$cap" '.[] | select(.kind == "memory-cap" and .cap == $cap)
    | .completed and .exit_status == 0 and .iterations_per_s > 0
    and .relative_speed > 0.8 and .relative_speed < 1.25' "$scratch/out" >/dev/null ||
    { jq -c 'select(.kind == "memory-cap")' "$scratch/out"; fail "cap $cap did not run at full speed"; }
done
jq -e -s '.[] | select(.kind == "memory-cap" and .cap == "2GiB") | .mem_limit_bytes == 2147483648' \
  "$scratch/out" >/dev/null || fail "a size cap is not taken as bytes"

if command -v xmllint >/dev/null; then xmllint --noout "$scratch/caps.svg"; fi
expect_grep 'id="speed-vs-cap"' "$scratch/caps.svg"
expect_grep 'id="memory-curve"' "$scratch/caps.svg"
