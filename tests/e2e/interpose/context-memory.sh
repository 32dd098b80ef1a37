#!/usr/bin/env bash
# A context's own memory counts against the job's limit: with 300 MiB per
# context, a 1 GiB job has 724 MiB left for its allocations, and is told so.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
mib=$((1024 * 1024))

client GPUSHARE_SIM_CTX_OVERHEAD=300MiB GPUSHARE_MEM_LIMIT=1GiB -- \
  "$gs_client" meminfo alloc 724MiB alloc 1MiB free alloc 725MiB
[ "$(value free meminfo)" = $((724 * mib)) ] || fail "free does not subtract the context's memory"
[ "$(value total meminfo)" = $((1024 * mib)) ] || fail "total is not the limit"
results=$(grep '^alloc\|^free' "$scratch/out" | sed 's/.*result=//' | tr '\n' ' ')
[ "$results" = "0 2 0 2 " ] || { cat "$scratch/out"; fail "results '$results', want '0 2 0 2 '"; }
