#!/usr/bin/env bash
# Every allocation family counts against the limit, and its free gives the
# bytes back: plain, pitch, managed, stream-ordered (default pool and
# explicit pool), virtual memory (cuMemCreate) and arrays.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"

for family in alloc managed async pool vmm; do
  client GPUSHARE_MEM_LIMIT=1GiB -- "$gs_client" --bind resolver "$family" 768MiB "$family" 512MiB \
    free "$family" 512MiB
  results=$(grep -E "^($family|free)" "$scratch/out" | sed 's/.*result=//' | tr '\n' ' ')
  [ "$results" = "0 2 0 0 " ] || { cat "$scratch/out"; fail "$family: results '$results', want '0 2 0 0 '"; }
done

# Pitch: rows of 4 MiB; arrays: float 4096 x 40000 = 625 MiB each.
client GPUSHARE_MEM_LIMIT=1GiB -- "$gs_client_direct" pitch 4MiB 200 pitch 4MiB 100 free pitch 4MiB 100
[ "$(grep '^pitch\|^free' "$scratch/out" | sed 's/.*result=\([0-9]*\).*/\1/' | tr '\n' ' ')" = "0 2 0 0 " ] ||
  { cat "$scratch/out"; fail "pitch allocations were not limited"; }
client GPUSHARE_MEM_LIMIT=1GiB -- "$gs_client_direct" array 4096 40000 array 4096 40000 free array 4096 20000
[ "$(grep '^array\|^free' "$scratch/out" | sed 's/.*result=\([0-9]*\).*/\1/' | tr '\n' ' ')" = "0 2 0 0 " ] ||
  { cat "$scratch/out"; fail "arrays were not limited"; }

# Families add up: 512 MiB plain + 512 MiB VMM fill a 1 GiB limit.
client GPUSHARE_MEM_LIMIT=1GiB -- "$gs_client" alloc 512MiB vmm 512MiB managed 1MiB
expect_grep '^managed bytes=1048576 result=2$' "$scratch/out"
