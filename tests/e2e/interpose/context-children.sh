#!/usr/bin/env bash
# Plays a job that escapes its memory limit through its processes' contexts
# (an H100 context costs 518-524 MiB, held by the device while the process
# lives): one gpushare-run job, under --mem-limit 2GiB, starts eight
# processes at once that each create their primary context and then hold
# it. The limit spans the job's process tree, so only three contexts of
# 524 MiB fit (the fourth would make 2096 MiB); the other five are refused
# with CUDA_ERROR_OUT_OF_MEMORY before their context exists, and the device
# holds no more than the limit for the job. The control without the
# interposer shows the escape: all eight contexts, 4.1 GiB.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"
export GPUSHARE_SIM_MEMORY=16GiB GPUSHARE_SIM_CTX_OVERHEAD=524MiB
MiB=1048576
children=8

# The job: eight children, each retaining its primary context (gs-client's
# start) and holding it until the fifo closes; the script waits until each
# child either holds its context or has exited, writes "settled", then
# waits for them all.
cat >"$scratch/children.sh" <<'SCRIPT'
set -u
client=$1 n=$2 dir=$3
for i in $(seq "$n"); do
  "$client" hold <"$dir/hold.fifo" >"$dir/child-$i.out" 2>"$dir/child-$i.err" &
  echo $! >"$dir/child-$i.pid"
done
for i in $(seq "$n"); do
  pid=$(cat "$dir/child-$i.pid")
  until grep -q '^hold ready' "$dir/child-$i.out" || ! kill -0 "$pid" 2>/dev/null; do
    sleep 0.01
  done
done
touch "$dir/settled"
wait
SCRIPT

# used_mib: what the device holds now for others than the reader, as NVML
# reports it (the reader, without the interposer, holds a context too).
used_mib() {
  env -u LD_PRELOAD "$gs_client" nvml 2>/dev/null |
    sed -n 's/.* used=\([0-9]*\).*/\1/p' | awk -v m=$MiB '{ print int($1 / m) - 524 }'
}

# run_job OUT_PREFIX [ENV=VALUE...]: runs the job, reports held contexts
# and the device's usage while they are held.
run_job() {
  local prefix=$1; shift
  rm -f "$scratch"/child-* "$scratch/settled" "$scratch/hold.fifo"
  mkfifo "$scratch/hold.fifo"
  env "$@" gpushare-run --sim --no-coordinator --mem-limit 2GiB -- \
    bash "$scratch/children.sh" "$gs_client" "$children" "$scratch" &
  local job=$!
  exec {hold}>"$scratch/hold.fifo"
  wait_for "the job's children to settle" 30 test -e "$scratch/settled"
  held=$(cat "$scratch"/child-*.out | grep -c '^hold ready' || true)
  refused=$(cat "$scratch"/child-*.err | grep -c 'cuDevicePrimaryCtxRetain: CUDA error 2$' || true)
  used=$(used_mib)
  eval "exec $hold>&-"
  wait "$job" || true
  echo "$prefix: held=$held refused=$refused used_mib=$used"
}

run_job control GPUSHARE_DISABLE=1
[ "$held" -eq "$children" ] || fail "control: only $held of $children contexts without the interposer"
[ "$used" -ge $((children * 524)) ] || fail "control: the device holds $used MiB"

run_job limited
[ "$held" -eq 3 ] ||
  fail "$held contexts of 524 MiB held under a 2 GiB limit (3 fit): $(cat "$scratch"/child-*.err)"
[ "$refused" -eq $((children - 3)) ] ||
  fail "$refused children refused with CUDA_ERROR_OUT_OF_MEMORY: $(cat "$scratch"/child-*.err)"
[ "$used" -le 2048 ] || fail "the job's processes hold $used MiB under a 2 GiB limit"
echo "interpose-context-children: ok"
