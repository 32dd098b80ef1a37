#!/usr/bin/env bash
# gpushare-probe's modes are listed in --help, each has its own help, and
# usage errors say what is wrong with status 2 and nothing on stdout.
. "$(dirname "$0")/../common.inc"
expect_exit 0 gpushare-probe --help
for mode in device memory interference node; do
  expect_grep "^ *$mode " "$scratch/out"
done
expect_exit 0 gpushare-probe memory --help
expect_grep '--caps' "$scratch/out"
expect_exit 0 gpushare-probe interference --help
expect_grep '--job' "$scratch/out"
expect_exit 0 gpushare-probe node --help
expect_grep '--window' "$scratch/out"
expect_exit 2 gpushare-probe
expect_grep "^gpushare-probe: error: A subcommand is required$" "$scratch/err"
expect_grep "^Try 'gpushare-probe --help' for more information\.$" "$scratch/err"
expect_exit 2 gpushare-probe device extra
expect_grep "^gpushare-probe: error: The following argument was not expected: extra$" "$scratch/err"
[ ! -s "$scratch/out" ] || fail "a usage error wrote to stdout"
expect_exit 2 gpushare-probe interference --sim
expect_grep "^gpushare-probe: error: --job is required" "$scratch/err"
