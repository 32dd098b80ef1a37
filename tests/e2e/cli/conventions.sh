#!/usr/bin/env bash
# Every program: --help on stdout with exit 0 ending with the man-page
# pointer; --version; a usage error gives "PROG: error: ..." and a "Try"
# line on stderr and the documented status (125 for gpushare-run, else 2).
. "$(dirname "$0")/../common.inc"

for prog in gpushare-run gpushare-ctl gpushare-probe gpushare-place; do
  expect_exit 0 "$prog" --help
  if [ -s "$scratch/err" ]; then fail "$prog --help wrote to stderr"; fi
  expect_grep "^For more details see $prog\(1\)\.$" "$scratch/out"
  [ "$(tail -n 1 "$scratch/out")" = "For more details see $prog(1)." ] ||
    fail "$prog --help does not end with the man-page pointer"

  expect_exit 0 "$prog" --version
  expect_grep "^$prog [0-9]+\.[0-9]+\.[0-9]+( \(commit [0-9a-f]+(-dirty)?\))?$" "$scratch/out"

  case $prog in
    gpushare-run) want=125 args=(--no-such-option true) ;;
    gpushare-ctl) want=2 args=(ls --no-such-option) ;;
    gpushare-probe) want=2 args=(device --no-such-option) ;;
    *) want=2 args=(--no-such-option) ;;
  esac
  expect_exit "$want" "$prog" "${args[@]}"
  if [ -s "$scratch/out" ]; then fail "$prog wrote to stdout on a usage error"; fi
  expect_grep "^$prog: error: .*--no-such-option" "$scratch/err"
  expect_grep "^Try '$prog --help' for more information\.$" "$scratch/err"
done

# Subcommand help works too, and names the verb's own options.
expect_exit 0 gpushare-ctl set --help
expect_grep "--mem-limit" "$scratch/out"
expect_exit 2 gpushare-ctl
expect_exit 2 gpushare-ctl frobnicate
