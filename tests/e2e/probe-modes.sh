#!/usr/bin/env bash
# gpushare-probe's memory and interference modes are listed but not built
# yet: they say so and fail with status 1.
. "$(dirname "$0")/common.inc"
expect_exit 0 gpushare-probe --help
expect_grep '^ *device ' "$scratch/out"
expect_grep '^ *memory .*not built yet' "$scratch/out"
expect_grep '^ *interference .*not built yet' "$scratch/out"
for mode in memory interference; do
  expect_exit 1 gpushare-probe "$mode"
  expect_grep "^gpushare-probe: error: '$mode' is not built yet" "$scratch/err"
  [ ! -s "$scratch/out" ] || fail "$mode wrote to stdout"
done
expect_exit 2 gpushare-probe
expect_grep "^gpushare-probe: error: A subcommand is required$" "$scratch/err"
expect_grep "^Try 'gpushare-probe --help' for more information\.$" "$scratch/err"
expect_exit 2 gpushare-probe device extra
expect_grep "^gpushare-probe: error: The following argument was not expected: extra$" "$scratch/err"
[ ! -s "$scratch/out" ] || fail "a usage error wrote to stdout"
