#!/usr/bin/env bash
# `gpushare-ctl set JOB --mem-limit` below what an
# opportunistic job holds moves its memory to the host instead of failing
# its next allocation (which its starting limit still allows); the data
# survives, and raising the limit again brings the memory back.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"
. "$e2e_dir/mem.inc"
export GPUSHARE_SIM_MEMORY=1GiB GPUSHARE_SIM_CTX_OVERHEAD=0

start_coordinator
gpushare-run --sim --opportunistic --name opp --mem-limit 768MiB -- "$c" init ctx \
  alloc:plain:256MiB fill:3 alloc:plain:256MiB fill:4 ready:"$s/full" wait:"$s/lowered" \
  alloc:plain:128MiB fill:5 check:5 managed-stats ready:"$s/grown" wait:"$s/raised" \
  managed-stats >"$s/opp.out" 2>"$s/opp.err" &
opp=$!
wait_for "the job's 512 MiB" 10 test -e "$s/full"
wait_for "512 MiB on the device in ls" 5 resident opp $((512 * MiB)) 0
expect_exit 0 gpushare-ctl set opp --mem-limit 300MiB
# The target is 300 MiB: one 256 MiB allocation moves.
wait_for "256 MiB on the host" 5 resident opp $((256 * MiB)) $((256 * MiB))
show_has opp ".devices[0].device_resident_target == $((300 * MiB))" ||
  fail "ls: $(gpushare-ctl show opp)"
touch "$s/lowered"
wait_for "the job's next allocation" 10 test -e "$s/grown"
# 384 MiB would pass 300 MiB: the 128 MiB allocation stays only if 256 leave.
wait_for "the target kept after the allocation" 5 resident opp $((128 * MiB)) $((512 * MiB))
expect_exit 0 gpushare-ctl set opp --mem-limit 768MiB
wait_for "all of it back" 5 resident opp $((640 * MiB)) 0
touch "$s/raised"
wait "$opp" || fail "the job failed: $(cat "$s/opp.out" "$s/opp.err")"
[ "$(field "$s/opp.out" alloc result 3)" = CUDA_SUCCESS ] || fail "the third allocation: $(cat "$s/opp.out")"
[ "$(field "$s/opp.out" managed-stats device_bytes 2)" = $((640 * MiB)) ] ||
  fail "the simulator's view after the raise: $(cat "$s/opp.out")"
