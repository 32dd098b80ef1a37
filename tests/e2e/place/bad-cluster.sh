#!/usr/bin/env bash
# An invalid cluster file is an error at FILE:LINE:COL with the line and a
# caret; nothing is placed and the exit status is 2.
. "$(dirname "$0")/../common.inc"
data="$GPUSHARE_SOURCE_DIR/tests/data/place"

check() {  # NAME: bad/NAME.toml gives the golden stderr bad-cluster/NAME.err
  expect_exit 2 gpushare-place -c "$1.toml" --jobs "$data/jobs.jsonl"
  [ ! -s "$scratch/out" ] || fail "$1: printed placements"
  cp "$scratch/err" "$scratch/$1.err"
  expect_golden "place/bad-cluster/$1.err" "$scratch/$1.err"
}

cat >unknown-key.toml <<'TOML'
[policy]
util_threshold = 0.8
utl = 0.5
TOML
check unknown-key

cat >wrong-type.toml <<'TOML'
[[tenant]]
name = "vision"
quota_gpus = "four"
TOML
check wrong-type

cat >bad-size.toml <<'TOML'
[[node]]
name = "n1"

[[node.gpu]]
index = 0
mem = "80 gigs"
TOML
check bad-size

cat >two-production.toml <<'TOML'
[[tenant]]
name = "t"
quota_gpus = 2

[[node]]
name = "n1"

[[node.gpu]]
index = 0
mem = "16GiB"

  [[node.gpu.job]]
  id = "a"
  class = "production"
  tenant = "t"

  [[node.gpu.job]]
  id = "b"
  class = "production"
  tenant = "t"
TOML
check two-production

cat >unknown-tenant.toml <<'TOML'
[[node]]
name = "n1"

[[node.gpu]]
index = 0
mem_bytes = 17179869184
job = [{ id = "a", class = "opportunistic", tenant = "ghost" }]
TOML
check unknown-tenant

cat >syntax.toml <<'TOML'
[policy
util_threshold = 0.8
TOML
check syntax

expect_exit 2 gpushare-place -c missing.toml </dev/null
expect_grep "^gpushare-place: error: missing.toml: cannot open: No such file or directory$" "$scratch/err"
