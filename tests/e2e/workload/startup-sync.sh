#!/usr/bin/env bash
# gpushare-workload --startup-steps runs a framework's start-up before the
# first iteration (each step paused on the host inside its burst, then
# synchronised: startup_ms counts it, no iteration record does), and
# --sync-every N,M with --sync-switch-s synchronises after every N, then
# every M iterations, in turn, each record saying the pattern and whether it
# synchronised; a group's synchronised record carries the group's GPU time.
. "$(dirname "$0")/../common.inc"
workload="$libexec/gpushare-workload"
use_sim

# Two start-up steps of four 1-ms kernels with 150 ms of host pause each:
# each at least 152 ms before the first iteration (the first half's kernels
# run during the pause, the second half's before the synchronisation).
expect_exit 0 "$workload" --mem 1MiB --verify 64KiB --iterations 3 --kernels-per-iter 4 \
  --kernel-us 1000 --startup-steps 2 --startup-pause-us 150000 --per-iteration
jq -e -s '([.[] | select(.kind == "workload-iteration")] | length == 3
           and all(.sync_every == 1 and .synced and .gpu_ms >= 4))
  and (.[] | select(.kind == "workload-summary") | .startup_ms >= 303 and .kernels == 12)' \
  "$scratch/out" >/dev/null || fail "start-up wrong: $(cat "$scratch/out")"

# Every iteration, then every 5, switching every 0.3 s, for 1.5 s.
expect_exit 0 "$workload" --mem 1MiB --verify 64KiB --duration 1.5 --kernels-per-iter 2 \
  --kernel-us 2000 --sync-every 1,5 --sync-switch-s 0.3 --per-iteration
jq -e -s '[.[] | select(.kind == "workload-iteration")] as $it
  | ($it | map(.sync_every) | unique) == [1, 5]
  and all($it[] | select(.sync_every == 1); .synced and .gpu_ms >= 4)
  and ([$it[] | select(.sync_every == 5 and .synced)] | length > 0
       and all(.[]; .gpu_ms >= 20))
  and ([$it[] | select(.sync_every == 5 and (.synced | not))] | length > 0
       and all(.[]; .gpu_ms == 0))
  and ($it | [range(1; length) as $i | select($it[$i].sync_every != $it[$i - 1].sync_every)
              | $it[$i - 1].synced] | length >= 2 and all)' \
  "$scratch/out" >/dev/null || fail "--sync-every wrong: $(cat "$scratch/out")"

for bad in "--sync-every 0" "--sync-every 1,x" "--sync-every ," "--startup-steps -1" \
  "--sync-switch-s -1"; do
  # shellcheck disable=SC2086
  expect_exit 2 "$workload" --iterations 1 $bad
  expect_grep '^gpushare-workload: error: ' "$scratch/err"
done
echo "workload-startup-sync: ok"
