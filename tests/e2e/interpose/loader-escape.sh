#!/usr/bin/env bash
# Plays a job whose library reaches the driver where LD_PRELOAD cannot see
# it: loaded with RTLD_DEEPBIND (its own libcuda.so.1
# binds before the preloaded interposer) or with dlmopen(LM_ID_NEWLM) (a
# namespace of its own with its own copy of the driver), calling cuMemAlloc
# directly or binding through dlopen + dlsym + cuGetProcAddress as a
# statically linked CUDA runtime does. Preloading alone let each of the four
# hold 4 GiB under a 1 GiB limit; the audit module that gpushare-run sets
# (LD_AUDIT) hands the library the interposer's wrappers, so each is refused
# at 1 GiB, and the GPU seen from outside holds no more. The control without
# the interposer (GPUSHARE_DISABLE=1) shows the attack itself works.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"

export GPUSHARE_SIM_MEMORY=16GiB
attack="$libexec/tests/gs-attack"
[ -f "$libexec/libgpushare-audit.so" ] || fail "the audit module is not installed"
run=(gpushare-run --sim --no-coordinator --mem-limit 1GiB --)

device_used() {
  "$attack" used 0 >"$scratch/used" 2>&1 || fail "used: $(cat "$scratch/used")"
  sed -n 's/^used device=[0-9]* bytes=\([0-9]*\)$/\1/p' "$scratch/used"
}

start_held control GPUSHARE_DISABLE=1 -- "${run[@]}" "$attack" loader deepbind direct 16 256MiB
expect_grep "^loader how=deepbind route=direct held=4294967296 result=0$" "$scratch/job-control.out"
end_job control

for how in deepbind newlm; do
  for route in direct resolver; do
    id="$how-$route"
    start_held "$id" -- "${run[@]}" "$attack" loader "$how" "$route" 16 256MiB
    expect_grep "^loader how=$how route=$route held=1073741824 result=2$" "$scratch/job-$id.out"
    used=$(device_used)
    [ "$used" -le $((1 << 30)) ] || fail "$id: the GPU holds $used bytes for a 1 GiB job"
    end_job "$id"
  done
done
echo "interpose-loader-escape: ok (4 GiB without the interposer; 1 GiB, refused, by each route with it)"
