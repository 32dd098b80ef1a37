#!/usr/bin/env bash
# Managed memory on the copy path, across processes (a 1 GiB device):
#   - prefetching a process's managed memory to the host frees device
#     memory that another process can then allocate, and takes time;
#     bringing it back needs room (it moves what fits, no more); the data
#     survives every move;
#   - an allocation that does not fit evicts managed memory and waits for
#     the eviction on the link (GPUSHARE_SIM_EVICT=on, the default); with
#     GPUSHARE_SIM_EVICT=off it fails instead;
#   - advice: memory preferring the device is not evicted by another
#     process's prefetch.
# Processes meet through files (ready:FILE, wait:FILE), never sleeps.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/mem.inc"
use_sim GPUSHARE_SIM_MEMORY=1GiB GPUSHARE_SIM_CTX_OVERHEAD=0
client="$libexec/tests/gpushare-cuda-client"
within() { awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v >= lo && v <= hi) }'; }

# --- Spill and restore by prefetch, with eviction off: only the owner's
# prefetch makes room.
export GPUSHARE_SIM_EVICT=off
"$client" init ctx stream alloc:managed:768MiB fill:7 advise:preferred-device info \
  ready:"$s/a-full" wait:"$s/b-refused" \
  prefetch:host stream-sync info managed-stats ready:"$s/a-spilled" wait:"$s/b-holds" \
  prefetch:device stream-sync info managed-stats check:7 ready:"$s/a-tried" wait:"$s/b-freed" \
  prefetch:device stream-sync info managed-stats check:7 >"$s/a.out" 2>"$s/a.err" &
owner=$!
"$client" wait:"$s/a-full" init ctx ?alloc:plain:768MiB ready:"$s/b-refused" >"$s/b1.out" 2>&1 ||
  fail "the first allocator failed: $(cat "$s/b1.out")"
"$client" wait:"$s/a-spilled" init ctx alloc:plain:768MiB info ready:"$s/b-holds" \
  wait:"$s/a-tried" free ready:"$s/b-freed" >"$s/b2.out" 2>&1 ||
  fail "the second allocator failed: $(cat "$s/b2.out")"
wait "$owner" || fail "the owner failed: $(cat "$s/a.out" "$s/a.err")"
grep -q '"step":"alloc","result":"CUDA_ERROR_OUT_OF_MEMORY"' "$s/b1.out" ||
  fail "with eviction off, 768 MiB fitted beside 768 MiB of managed memory: $(cat "$s/b1.out")"
free=$(field "$s/a.out" info free_bytes 1)
[ "$free" = $((256 * MiB)) ] || fail "all on the device: $free bytes free, want 256 MiB"
# 768 MiB to the host at 51 GB/s: 15.8 ms.
ms=$(field "$s/a.out" stream-sync wall_ms 1)
within "$ms" 15 5000 || fail "spilling 768 MiB took $ms ms, want 15.8"
free=$(field "$s/a.out" info free_bytes 2)
[ "$free" = $((1024 * MiB)) ] || fail "all on the host: $free bytes free, want 1 GiB"
free=$(field "$s/b2.out" info free_bytes)
[ "$free" = $((256 * MiB)) ] || fail "after the other's allocation: $free bytes free, want 256 MiB"
# Back while the other holds 768 MiB: only 256 MiB fit, and they move.
free=$(field "$s/a.out" info free_bytes 3)
[ "$free" = 0 ] || fail "a prefetch back beside 768 MiB left $free bytes free, want 0"
free=$(field "$s/a.out" info free_bytes 4)
[ "$free" = $((256 * MiB)) ] || fail "all back: $free bytes free, want 256 MiB"
# The owner's own view (the simulator's gpushare_sim_managed_stats): on the
# device, 0, then 256 MiB, then all 768 MiB.
for n in 1 2 3; do
  [ "$(field "$s/a.out" managed-stats managed_bytes "$n")" = $((768 * MiB)) ] ||
    fail "managed-stats $n: $(cat "$s/a.out")"
done
resident="$(field "$s/a.out" managed-stats device_bytes 1) $(field "$s/a.out" managed-stats device_bytes 2) $(field "$s/a.out" managed-stats device_bytes 3)"
[ "$resident" = "0 $((256 * MiB)) $((768 * MiB))" ] || fail "device-resident bytes $resident"
[ "$(grep -c '"step":"check","result":"CUDA_SUCCESS"' "$s/a.out")" = 2 ] ||
  fail "the data did not survive: $(cat "$s/a.out")"

# --- An allocation that needs managed memory's room evicts it and waits
# for the transfer: 512 MiB at 1 GB/s take 537 ms.
export GPUSHARE_SIM_EVICT=on GPUSHARE_SIM_PCIE_GBPS=1
rm -f "$s"/a-* "$s"/b-*
"$client" init ctx alloc:managed:768MiB fill:9 ready:"$s/a-full" wait:"$s/b-done" check:9 \
  info >"$s/a.out" 2>"$s/a.err" &
owner=$!
"$client" wait:"$s/a-full" init ctx alloc:plain:256MiB alloc:plain:512MiB info \
  ready:"$s/b-done" >"$s/b.out" 2>&1 || fail "the allocator failed: $(cat "$s/b.out")"
wait "$owner" || fail "the owner failed: $(cat "$s/a.out" "$s/a.err")"
ms=$(field "$s/b.out" alloc wall_ms 1)
within "$ms" 0 200 || fail "an allocation that fitted took $ms ms"
ms=$(field "$s/b.out" alloc wall_ms 2)
within "$ms" 520 10000 || fail "an allocation evicting 512 MiB at 1 GB/s took $ms ms, want 537"
free=$(field "$s/b.out" info free_bytes)
[ "$free" = 0 ] || fail "after the eviction: $free bytes free, want 0"
grep -q '"step":"check","result":"CUDA_SUCCESS"' "$s/a.out" || fail "evicted data lost: $(cat "$s/a.out")"

# --- Advice: another process's prefetch evicts memory with no preference,
# not memory preferring the device. The prefetching process's kernel shows
# how much of its memory made it: all (10 ms) or half (10 x (1 + 4 x 0.5)).
unset GPUSHARE_SIM_PCIE_GBPS
for advice in none preferred-device; do
  rm -f "$s"/a-* "$s"/b-*
  steps=(init ctx alloc:managed:768MiB)
  [ "$advice" = none ] || steps+=(advise:"$advice" advise:accessed-by)
  "$client" "${steps[@]}" ready:"$s/a-full" wait:"$s/b-done" >"$s/a.out" 2>&1 &
  owner=$!
  "$client" wait:"$s/a-full" init ctx stream alloc:managed-host:512MiB prefetch:device stream-sync \
    events:10000:200000 ready:"$s/b-done" >"$s/b.out" 2>&1 || fail "prefetcher: $(cat "$s/b.out")"
  wait "$owner" || fail "the owner failed: $(cat "$s/a.out")"
  ms=$(field "$s/b.out" events elapsed_ms)
  want=10
  [ "$advice" = none ] || want=30
  within "$ms" $((want - 1)) $((want + 1)) ||
    fail "owner advice $advice: the prefetcher's kernel took $ms ms, want $want"
done
