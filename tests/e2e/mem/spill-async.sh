#!/usr/bin/env bash
# Spill of stream-ordered memory on the simulated GPU (1 GiB,
# eviction off, so only a spill makes room): an opportunistic job holds
# 256 MiB from cuMemAllocAsync and 512 MiB from cuMemAllocFromPoolAsync
# (a pool created without IPC handle types), both managed memory under the
# interposer. A production job's 896 MiB then fits only once both moved to
# the host: it succeeds, the data survives the spill and the restore,
# and `gpushare-ctl node` shows where the GPU's memory is.
# Then stream order: cuMemFreeAsync behind a 2 s kernel frees nothing
# until the stream gets there, and its bytes stay charged until then.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"
. "$e2e_dir/mem.inc"
export GPUSHARE_SIM_MEMORY=1GiB GPUSHARE_SIM_EVICT=off GPUSHARE_SIM_CTX_OVERHEAD=0

start_coordinator
gpushare-run --sim --opportunistic --name opp -- "$c" init ctx stream alloc:async:256MiB fill:3 \
  alloc:pool:512MiB fill:7 managed-stats ready:"$s/opp-full" wait:"$s/prod-done" \
  check:7 managed-stats wait:"$s/node-seen" ready:"$s/opp-checked" wait:"$s/restored" \
  managed-stats check:7 free check:3 \
  >"$s/opp.out" 2>"$s/opp.err" &
opp=$!
wait_for "the opportunistic job's 768 MiB" 10 test -e "$s/opp-full"
[ "$(field "$s/opp.out" managed-stats managed_bytes 1)" = $((768 * MiB)) ] ||
  fail "async and pool allocations are not managed memory: $(cat "$s/opp.out")"
wait_for "its 768 MiB on the device in ls" 5 \
  show_has opp ".mem_device_resident_bytes == $((768 * MiB))"

gpushare-run --sim --name prod -- "$c" init ctx alloc:plain:896MiB fill:5 \
  ready:"$s/prod-done" wait:"$s/opp-checked" check:5 >"$s/prod.out" 2>"$s/prod.err" &
prod=$!
wait_for "the production allocation" 10 test -e "$s/prod-done"
# gpushare-ctl node: the GPU's spillable memory, all 768 MiB on the host,
# and both jobs counted once.
wait_for "node to show the spill" 5 sh -c "gpushare-ctl node | jq -se '
  (.[0] | .mem_device_resident_bytes == 0 and
   .mem_host_resident_bytes == $((768 * MiB)) and .opportunistic.jobs == 1) and
  (.[-1] | .jobs == 2 and .mem_host_resident_bytes == $((768 * MiB)))'"
touch "$s/node-seen"
wait "$prod" || fail "the production job failed: $(cat "$s/prod.out" "$s/prod.err")"
wait_for "its memory back on the device" 5 \
  show_has opp ".mem_host_resident_bytes == 0 and .mem_device_resident_bytes == $((768 * MiB))"
touch "$s/restored"
wait "$opp" || fail "the opportunistic job failed: $(cat "$s/opp.out" "$s/opp.err")"
[ "$(field "$s/opp.out" managed-stats device_bytes 2)" = 0 ] ||
  fail "during the production job, the async and pool memory was not on the host: $(cat "$s/opp.out")"
[ "$(field "$s/opp.out" managed-stats device_bytes 3)" = $((768 * MiB)) ] ||
  fail "after the production job: $(cat "$s/opp.out")"
[ "$(jq -s '[.[] | select(.step=="check" and .result=="CUDA_SUCCESS")] | length' "$s/opp.out")" = 3 ] ||
  fail "a checksum failed: $(cat "$s/opp.out")"

# Stream order, with a 384 MiB limit: the free behind a 2 s kernel leaves
# 256 MiB allocated and charged (a second 256 MiB is refused) until the
# stream passes it; then the next allocation drains it and fits. Behind a
# second 2 s kernel, an allocation of the size just freed on the same
# stream takes that memory back at once, as a pool would (without reuse,
# 255 + 255 MiB charged would be refused).
gpushare-run --sim --opportunistic --mem-limit 384MiB --name order -- "$c" init ctx stream \
  alloc:async:256MiB fill:9 kernel:spin launch:1:2000000 free managed-stats ?alloc:async:255MiB \
  stream-sync alloc:async:255MiB managed-stats launch:1:2000000 free alloc:async:255MiB \
  managed-stats \
  >"$s/order.out" 2>"$s/order.err" || fail "the stream-order job failed: $(cat "$s/order.out" "$s/order.err")"
[ "$(field "$s/order.out" managed-stats managed_bytes 1)" = $((256 * MiB)) ] ||
  fail "cuMemFreeAsync freed before its stream got there: $(cat "$s/order.out")"
[ "$(field "$s/order.out" alloc result 2)" = CUDA_ERROR_OUT_OF_MEMORY ] ||
  fail "bytes pending a stream-ordered free were not charged: $(cat "$s/order.out")"
[ "$(field "$s/order.out" managed-stats managed_bytes 2)" = $((255 * MiB)) ] ||
  fail "the free was not done once the stream passed it: $(cat "$s/order.out")"
[ "$(field "$s/order.out" managed-stats managed_bytes 3)" = $((255 * MiB)) ] ||
  fail "a same-size allocation on the same stream did not reuse the pending free: $(cat "$s/order.out")"
