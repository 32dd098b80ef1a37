#!/usr/bin/env bash
# fit-sim-cost: the cold run after a switch that makes the simulator's
# pairs without gpushare match a GPU's. Its arguments are checked (exit 2,
# naming what is wrong); a gpu-check report without the colocation check is
# refused; and with the H100's figures two candidates run, each printed
# with its fractions, the costlier one charging the GPU-bound pair's
# production more (the setting reaches the simulator), and the fit names
# the nearer. Short runs (--scale 0.2): the figures are noisy, the order
# of 0 and 400 us is not.
. "$(dirname "$0")/../common.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
fit="$libexec/bench/fit-sim-cost"
[ -x "$fit" ] || fail "$fit is not installed"

expect_exit 2 "$fit" --resnet 0.9 --matmul 0.5,0.6
expect_grep "^fit-sim-cost: error: --resnet wants PROD,OPP fractions of solo" "$scratch/err"
expect_exit 2 "$fit" --resnet 0.917,0.755 --matmul 0.585,0.602 --candidates 1,x
expect_grep "^fit-sim-cost: error: --candidates wants microseconds" "$scratch/err"
expect_exit 2 "$fit" --bogus
expect_grep "^fit-sim-cost: error: unknown argument '--bogus'" "$scratch/err"
echo '{"kind":"gpu-check-report","checks":[{"name":"hook-overhead","measurements":{}}]}' \
  >"$scratch/report.json"
expect_exit 2 "$fit" --report "$scratch/report.json"
expect_grep "no colocation check with the resnet and matmul pairs" "$scratch/err"

expect_exit 0 "$fit" --resnet 0.917,0.755 --matmul 0.585,0.602 --candidates 0,400 --scale 0.2
[ "$(jq -s '[.[] | select(.kind == "sim-cost-candidate")] | length' "$scratch/out")" = 2 ] ||
  fail "expected two candidates: $(cat "$scratch/out")"
jq -se '[.[] | select(.kind == "sim-cost-candidate")] as $c
  | ($c | map(select(.cold_us == 0))[0].matmul.production)
    > ($c | map(select(.cold_us == 400))[0].matmul.production)' "$scratch/out" >/dev/null ||
  fail "400 us of cold run did not cost the GPU-bound production more than 0: $(cat "$scratch/out")"
jq -se '[.[] | select(.kind == "sim-cost-candidate")] as $c | [.[] | select(.kind == "sim-cost-fit")][0]
  | .best_cold_us == ($c | min_by(.distance).cold_us) and .setting == "GPUSHARE_SIM_SWITCH_COLD_US=\(.best_cold_us)"' \
  "$scratch/out" >/dev/null || fail "the fit does not name the nearer candidate: $(cat "$scratch/out")"
echo "bench-fit-sim-cost: ok"
