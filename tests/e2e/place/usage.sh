#!/usr/bin/env bash
# Usage errors of gpushare-place exit 2 with a message and a "Try" line, and
# print nothing on stdout.
. "$(dirname "$0")/../common.inc"
data="$GPUSHARE_SOURCE_DIR/tests/data/place"

usage_error() {  # PATTERN ARGS...
  local pattern=$1; shift
  expect_exit 2 gpushare-place "$@" </dev/null
  [ ! -s "$scratch/out" ] || fail "'$*' wrote to stdout"
  expect_grep "^gpushare-place: error: $pattern" "$scratch/err"
  expect_grep "^Try 'gpushare-place --help' for more information\.$" "$scratch/err"
}

unset GPUSHARE_CLUSTER
usage_error "no cluster file: give --cluster FILE or set GPUSHARE_CLUSTER"
usage_error "--explain needs --format json" -c "$data/cluster.toml" --explain -f slurm
usage_error "--format: yaml not in \{json,slurm,env\}$" -c "$data/cluster.toml" --format yaml
usage_error "The following argument was not expected: extra-argument$" -c "$data/cluster.toml" \
  extra-argument

# --help names every option.
gpushare-place --help >"$scratch/help"
for option in --cluster --jobs --format --explain --state-out --help --version; do
  expect_grep "$option" "$scratch/help"
done
