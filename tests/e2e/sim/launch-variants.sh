#!/usr/bin/env bash
# Every launch path runs its kernel for the time it should, as events
# measure it: cuLaunchKernel, cuLaunchKernelEx and cuLaunchCooperativeKernel
# (and their per-thread twins through the resolver), a library's CUkernel,
# a kernel of the simulator's text module format (its declared duration,
# whatever the parameter); stream priorities are clamped to the range.
. "$(dirname "$0")/../common.inc"
use_sim
client="$libexec/tests/gpushare-cuda-client"
# Each events step follows a 20 ms lead kernel, so its time is exact.
elapsed() { jq -r 'select(.step=="events") | .elapsed_ms' "$scratch/out" | tr '\n' ' '; }
steps=(init ctx launch-mode:ex events:3000:20000 launch-mode:coop events:4000:20000 kernel:library
  launch-mode:plain events:5000:20000 kernel:text:forward:6000 events:1:20000 launch-mode:ex
  events:1:20000)

for binding in "" "--bind resolver --per-thread" "--bind dlsym"; do
  # shellcheck disable=SC2086
  expect_exit 0 "$client" $binding "${steps[@]}"
  [ "$(elapsed)" = "3 4 5 6 6 " ] || fail "${binding:-direct}: kernels took $(elapsed)ms, want 3 4 5 6 6"
done

expect_exit 0 "$client" init ctx stream-priority:-3 stream-priority:-9 stream-priority:4
[ "$(jq -r 'select(.step=="stream-priority") | .priority' "$scratch/out" | tr '\n' ' ')" = "-3 -5 0 " ] ||
  fail "stream priorities were not clamped to [-5, 0]"
