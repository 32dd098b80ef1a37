#!/usr/bin/env bash
# Plays a job that escapes its memory limit through memory pools: a new pool per 256 MiB chunk, allocate, free stream-ordered. A
# pool keeps what it reserved (with release threshold max always, with the
# default 0 until a synchronisation), so the job must be charged what its
# pools reserve, on the pool's own device. Under a 1 GiB limit on a 16 GiB
# simulated GPU the fifth chunk is refused, whatever the threshold; the
# control without the interposer holds 4 GiB. A pool on device 1 used from
# a context on device 0 is charged to device 1. One pool used honestly
# (allocate, free, synchronise) is never refused.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"

export GPUSHARE_SIM_MEMORY=16GiB GPUSHARE_SIM_DEVICES=2
attack="$libexec/tests/gs-attack"
run=(gpushare-run --sim --no-coordinator --mem-limit 1GiB --)

# device_used INDEX: a simulated GPU's used bytes, as NVML reports them outside any job.
device_used() {
  "$attack" used "$1" >"$scratch/used" 2>&1 || fail "used: $(cat "$scratch/used")"
  sed -n 's/^used device=[0-9]* bytes=\([0-9]*\)$/\1/p' "$scratch/used"
}

start_held control GPUSHARE_DISABLE=1 -- "${run[@]}" "$attack" pool 16 256MiB max
expect_grep "^pool done=16 held=4294967296 result=0$" "$scratch/job-control.out"
control_used=$(device_used 0)
end_job control

for threshold in max 0; do
  start_held "greedy$threshold" -- "${run[@]}" "$attack" pool 16 256MiB "$threshold"
  expect_grep "^pool done=4 held=1073741824 result=2$" "$scratch/job-greedy$threshold.out"
  used=$(device_used 0)
  [ "$used" -le $((1 << 30)) ] || fail "threshold $threshold: the GPU holds $used bytes for a 1 GiB job"
  end_job "greedy$threshold"
done

# Pools on device 1, the current context on device 0.
start_held other -- "${run[@]}" "$attack" pool 16 256MiB max 1
expect_grep "^pool done=4 held=1073741824 result=2$" "$scratch/job-other.out"
used1=$(device_used 1)
[ "$used1" -le $((1 << 30)) ] || fail "device 1 holds $used1 bytes for a 1 GiB job"
end_job other

expect_exit 0 "${run[@]}" "$attack" pool-cycle 16 512MiB </dev/null
expect_grep "^pool-cycle done=16 held=0 result=0$" "$scratch/out"
echo "interpose-pool-escape: ok (held from outside: $control_used bytes without the interposer, $used with it, $used1 on device 1)"
