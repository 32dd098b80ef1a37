#!/usr/bin/env bash
# Spill on the simulated GPU (1 GiB, eviction off, so only a spill
# makes room): an opportunistic job holds 768 MiB of cuMemAlloc memory
# (managed memory under the interposer); a production job then allocates
# 640 MiB, which fits only once the opportunistic job moved 512 MiB to the
# host. The production allocation succeeds; the opportunistic job's data
# survives the spill and the restore; its memory comes back to the device
# after the production job exits; ls shows where it is. A production job
# over its own limit still gets CUDA_ERROR_OUT_OF_MEMORY at once.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"
. "$e2e_dir/mem.inc"
export GPUSHARE_SIM_MEMORY=1GiB GPUSHARE_SIM_EVICT=off GPUSHARE_SIM_CTX_OVERHEAD=0

start_coordinator
gpushare-run --sim --opportunistic --name opp -- "$c" init ctx alloc:plain:256MiB fill:3 \
  alloc:plain:512MiB fill:7 managed-stats ready:"$s/opp-full" wait:"$s/prod-done" \
  check:7 managed-stats ready:"$s/opp-checked" wait:"$s/restored" managed-stats check:7 \
  >"$s/opp.out" 2>"$s/opp.err" &
opp=$!
wait_for "the opportunistic job's 768 MiB" 10 test -e "$s/opp-full"
wait_for "its 768 MiB on the device in ls" 5 \
  show_has opp ".mem_device_resident_bytes == $((768 * MiB))"

# Over its own limit: refused at once, nothing spilled for it.
gpushare-run --sim --name greedy --mem-limit 512MiB -- "$c" init ctx ?alloc:plain:640MiB \
  >"$s/greedy.out" 2>&1 || fail "the greedy job failed: $(cat "$s/greedy.out")"
[ "$(field "$s/greedy.out" alloc result)" = CUDA_ERROR_OUT_OF_MEMORY ] ||
  fail "a production job over its own limit: $(cat "$s/greedy.out")"
show_has opp '.mem_host_resident_bytes == 0' ||
  fail "a refused allocation spilled opportunistic memory: $(gpushare-ctl show opp)"

gpushare-run --sim --name prod -- "$c" init ctx alloc:plain:640MiB fill:5 info \
  ready:"$s/prod-done" wait:"$s/opp-checked" check:5 >"$s/prod.out" 2>"$s/prod.err" &
prod=$!
wait "$prod" || fail "the production job failed: $(cat "$s/prod.out" "$s/prod.err")"
ms=$(field "$s/prod.out" alloc wall_ms)
[ "$(field "$s/prod.out" info free_bytes)" -le $((128 * MiB)) ] ||
  fail "the production job's view: $(cat "$s/prod.out")"
wait_for "its memory back on the device" 5 \
  show_has opp ".mem_host_resident_bytes == 0 and .mem_device_resident_bytes == $((768 * MiB))"
touch "$s/restored"
wait "$opp" || fail "the opportunistic job failed: $(cat "$s/opp.out" "$s/opp.err")"

# Device-resident: all 768 MiB, then 256 MiB (the 512 MiB allocation moved,
# largest first, under the 384 MiB target), then all again.
[ "$(field "$s/opp.out" managed-stats device_bytes 1)" = $((768 * MiB)) ] ||
  fail "before the spill: $(cat "$s/opp.out")"
[ "$(field "$s/opp.out" managed-stats device_bytes 2)" = $((256 * MiB)) ] ||
  fail "during the production job: $(cat "$s/opp.out")"
[ "$(field "$s/opp.out" managed-stats device_bytes 3)" = $((768 * MiB)) ] ||
  fail "after the production job: $(cat "$s/opp.out")"
echo "production allocation with a 512 MiB spill: $ms ms"
