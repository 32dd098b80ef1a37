#!/usr/bin/env bash
# gpushare-probe interference: each job alone, then the pair uncontrolled
# (both production) and under QoS (one production, one opportunistic, both
# ways round), through a private coordinator. On the simulated GPU, which
# time-slices between processes, two busy jobs each get a share of their
# solo speed, and the shares add up to about one device. (QoS numbers are
# whatever the coordinator's controller does at the time: only their
# shape is checked here; in a 1 s run the controller may hold the
# opportunistic job at its floor the whole time, so its speed may be 0.)
. "$(dirname "$0")/../common.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
w="$libexec/gpushare-workload"
a="$w --mem 512MiB --grow 128MiB --alloc async --kernel-us 2000 --host-us 3000 --duration 60"
b="$w --mem 256MiB --kernel-us 4000 --kernels-per-iter 2 --duration 60"

expect_exit 0 gpushare-probe interference --sim --duration 1s --plot "$scratch/matrix.svg" \
  --job "$a" --job "$b"
jq -e -s 'map(.kind) == ["interference-solo", "interference-solo", "interference-pair",
  "interference-pair", "interference-pair"]' "$scratch/out" >/dev/null ||
  { cat "$scratch/out"; fail "not two solo and three pair records"; }
# Alone: launch rates as the shapes say (4 per 11 ms; 2 per 8 ms), and a's
# iterations from its memory curve.
jq -e -s '.[0].job == "j1" and (.[0].launches_per_s / (4000 / 11) - 1 | fabs) < 0.25
  and (.[0].iterations_per_s / (1000 / 11) - 1 | fabs) < 0.25
  and .[1].job == "j2" and (.[1].launches_per_s / 250 - 1 | fabs) < 0.25
  and all(.[0:2][]; .stopped and .exit_status == 143)' "$scratch/out" >/dev/null ||
  { jq -c '.' "$scratch/out" | head -2; fail "solo speeds do not match the workloads"; }
jq -e -s '.[2] | .setting == "uncontrolled" and .qos == ["production", "production"]
  and all(.relative_speed[]; . > 0.2 and . < 1.05)
  and (.relative_speed | add) < 1.5
  and ((.slowdown[0] * .relative_speed[0]) - 1 | fabs) < 0.01' "$scratch/out" >/dev/null ||
  { jq -c '.[2]' -s "$scratch/out"; fail "the uncontrolled pair does not share the device"; }
jq -e -s '(.[3:5] | all(.[]; .setting == "qos" and .qos == ["production", "opportunistic"]
  and .opportunistic_share == .relative_speed[1]
  and .relative_speed[0] > 0 and .relative_speed[0] < 1.05
  and (.relative_speed[1] == null or (.relative_speed[1] >= 0 and .relative_speed[1] < 1.05))))
  and .[3].jobs == ["j1", "j2"] and .[4].jobs == ["j2", "j1"]' "$scratch/out" >/dev/null ||
  fail "the QoS pairs are not both ways round"

if command -v xmllint >/dev/null; then xmllint --noout "$scratch/matrix.svg"; fi
for id in interference-matrix interference-matrix-1 interference-matrix-2; do
  expect_grep "id=\"$id\"" "$scratch/matrix.svg"
done
# The private coordinator is gone, and it left nothing behind.
[ -z "$(ls -A "$XDG_RUNTIME_DIR")" ] || fail "the private coordinator left $(ls "$XDG_RUNTIME_DIR")"

# The matrix as a table.
expect_exit 0 gpushare-probe interference --sim --duration 1s --format table \
  --job "$a" --job "$b"
expect_grep '^JOB +LAUNCHES/S +ITERATIONS/S +COMMAND$' "$scratch/out"
expect_grep '^uncontrolled: row beside column' "$scratch/out"
expect_grep '^QoS: row production, column opportunistic' "$scratch/out"
expect_grep '^j1 +- +[0-9.]+$' "$scratch/out"

expect_exit 2 gpushare-probe interference --sim --job true
expect_grep '^gpushare-probe: error: --job: give two to eight jobs$' "$scratch/err"
expect_exit 2 gpushare-probe interference --sim --job true --job ' '
expect_grep '^gpushare-probe: error: --job: empty command$' "$scratch/err"
expect_exit 2 gpushare-probe interference --sim --job true --job true --duration 1parsec
expect_grep '^gpushare-probe: error: --duration: ' "$scratch/err"
expect_exit 2 gpushare-probe interference --sim --job true --job true --format yaml
