#!/usr/bin/env bash
# Many threads allocating at once at the limit never exceed it together
# (reserve before allocate), and nothing but out-of-memory is reported.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"

limit=$((1024 * 1024 * 1024))
for round in 1 2 3; do
  client GPUSHARE_MEM_LIMIT=$limit -- "$gs_client" threads 16 7MiB
  granted=$(value granted threads)
  [ "$(value other_errors threads)" = 0 ] || fail "threads saw errors other than out-of-memory"
  [ "$granted" -le "$limit" ] || fail "round $round: threads were granted $granted bytes, over $limit"
  # They must also get close to it: within one allocation of the limit.
  [ "$granted" -gt $((limit - 7 * 1024 * 1024)) ] || fail "round $round: only $granted bytes granted"
done
