#!/usr/bin/env bash
# gpushare-run --gpu naming a GPU that does not exist fails before exec with
# its own status 125 and a message saying what exists (asked of NVML; here
# the simulated one, with two devices), instead of running the job into a
# failure at cuInit. An existing index or UUID prefix runs the job.
. "$(dirname "$0")/../common.inc"

export GPUSHARE_SIM_DEVICES=2
expect_exit 125 gpushare-run --sim --no-coordinator --gpu 99 -- true
expect_grep "^gpushare-run: error: --gpu: no GPU 99: this machine has 2 \(0 to 1\)$" "$scratch/err"
expect_exit 125 gpushare-run --sim --no-coordinator -p gpu=GPU-ffffffff -- true
expect_grep "^gpushare-run: error: --gpu: no GPU has the UUID GPU-ffffffff$" "$scratch/err"
[ -s "$scratch/out" ] && fail "the command ran"

expect_exit 0 gpushare-run --sim --no-coordinator --gpu 1 -- true
uuid=$(gpushare-probe device --sim | jq -r 'select(.index == 1) | .uuid')
[ -n "$uuid" ] || fail "no UUID for device 1 from gpushare-probe device --sim"
expect_exit 0 gpushare-run --sim --no-coordinator --gpu "${uuid:0:12}" -- true
echo "run-gpu-missing: ok"
