#!/usr/bin/env bash
# Plays a job that escapes its memory limit through virtual memory
# management: cuMemCreate, map, then cuMemRelease while
# the mapping lives. The physical memory is freed only at the last unmap,
# so the charge must stay until then. Under a 1 GiB limit on a 16 GiB
# simulated GPU the fifth 256 MiB handle is refused and the GPU, looked at
# from outside while the attacker holds its mappings, holds 1 GiB of it;
# the control without the interposer holds all 4 GiB. The honest order
# (map, release, unmap) gives every byte back: 16 cycles all succeed.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"

export GPUSHARE_SIM_MEMORY=16GiB
attack="$libexec/tests/gs-attack"
run=(gpushare-run --sim --no-coordinator --mem-limit 1GiB --)

# device_used INDEX: a simulated GPU's used bytes, as NVML reports them outside any job.
device_used() {
  "$attack" used "$1" >"$scratch/used" 2>&1 || fail "used: $(cat "$scratch/used")"
  sed -n 's/^used device=[0-9]* bytes=\([0-9]*\)$/\1/p' "$scratch/used"
}

start_held control GPUSHARE_DISABLE=1 -- "${run[@]}" "$attack" vmm 16 256MiB
expect_grep "^vmm done=16 held=4294967296 result=0$" "$scratch/job-control.out"
control_used=$(device_used 0)
end_job control

start_held greedy -- "${run[@]}" "$attack" vmm 16 256MiB
expect_grep "^vmm done=4 held=1073741824 result=2$" "$scratch/job-greedy.out"
used=$(device_used 0)
[ "$used" -le $((1 << 30)) ] || fail "the GPU holds $used bytes for a 1 GiB job"
end_job greedy

expect_exit 0 "${run[@]}" "$attack" vmm-cycle 16 256MiB </dev/null
expect_grep "^vmm-cycle done=16 held=0 result=0$" "$scratch/out"
echo "interpose-vmm-escape: ok (held from outside: $control_used bytes without the interposer, $used with it)"
