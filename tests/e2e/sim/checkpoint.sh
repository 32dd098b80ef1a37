#!/usr/bin/env bash
# The simulated driver's process checkpoint (cuCheckpointProcess*), called
# by another process on a running job: the states and their order, a lock
# that blocks the job's calls without spinning and one that times out, a
# checkpoint that leaves 0 bytes on the device (its context included), the
# refusals of a restore (pairs that miss a device or name one the process
# does not see, another chip type, a device without room: the process stays
# checkpointed), and a restore onto the other device: the job's data intact
# at the same addresses, its later kernels on the new device, its CUdevice 0
# now that device's UUID.
. "$(dirname "$0")/../common.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
export LD_LIBRARY_PATH="$libexec/sim" GPUSHARE_SIM_DEVICES=2 GPUSHARE_SIM_MEMORY=4GiB
export GPUSHARE_SIM_CTX_OVERHEAD=256MiB GPUSHARE_SIM_EVICT=off
client="$libexec/tests/gpushare-ckpt-client"
GiB=$((1 << 30)); MiB=$((1 << 20))

wait_file() {  # PATH: polls for it, 20 s at most
  local tries=0
  until [ -s "$1" ]; do
    [ "$tries" -lt 2000 ] || fail "$1 never appeared"
    sleep 0.01; tries=$((tries + 1))
  done
}
ctl() { "$client" "$@" --pid "$pid"; }
expect_result() {  # RESULT ACTION ARGS...: the call answers RESULT
  local want=$1; shift
  local got
  got=$(ctl "$@" | jq -r .result) || true
  [ "$got" = "$want" ] || fail "$1 ${*:2}: $got, want $want"
}
state() { ctl state | jq -r .state; }
used() { "$client" stats | jq -r "select(.device==$1) | .used_bytes"; }
kernels() { "$client" stats | jq -r "select(.device==$1) | .kernels"; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# A job of 1 GiB on device 0, training until told to stop.
"$client" job --mem $GiB --ready "$scratch/job.ready" --stop "$scratch/job.stop" >"$scratch/job.out" &
job=$!
wait_file "$scratch/job.ready"
pid=$(cat "$scratch/job.ready")
[ "$(state)" = running ] || fail "a new process is $(state), want running"
ctl tid | jq -e '.tid > 0' >/dev/null || fail "no restore thread id"
[ "$(used 0)" -eq $((GiB + 256 * MiB)) ] || fail "device 0 holds $(used 0) bytes before"

# Out of order, unknown processes, the caller itself.
expect_result CUDA_ERROR_ILLEGAL_STATE checkpoint
expect_result CUDA_ERROR_ILLEGAL_STATE unlock
expect_result CUDA_ERROR_ILLEGAL_STATE restore
pid=999999999 expect_result CUDA_ERROR_INVALID_VALUE lock
[ "$("$client" state --pid 1 | jq -r .result)" = CUDA_ERROR_INVALID_VALUE ] ||
  fail "a process without CUDA has a checkpoint state"

# Locked: its calls block (it does not step), and it spins on nothing.
expect_result CUDA_SUCCESS lock
locked_at=$(date +%s%N)
[ "$(state)" = locked ] || fail "after lock: $(state)"
expect_result CUDA_ERROR_ILLEGAL_STATE lock
before_kernels=$(kernels 0)
ticks=$(cpu_ticks "$pid")
sleep 0.5  # a stretch to measure, not a wait for anything
[ "$(kernels 0)" -eq "$before_kernels" ] || fail "the locked job launched kernels"
spent=$(( $(cpu_ticks "$pid") - ticks ))
[ "$spent" -le 5 ] || fail "the locked job used $spent clock ticks of CPU in 0.5 s (spinning?)"

# Checkpointed: nothing left on the device, no context for NVML either.
expect_result CUDA_SUCCESS checkpoint
[ "$(state)" = checkpointed ] || fail "after checkpoint: $(state)"
[ "$(used 0)" -eq 0 ] || fail "device 0 holds $(used 0) bytes while checkpointed"
"$libexec/tests/gpushare-nvml-smi" >"$scratch/smi" || true
if jq -e --argjson pid "$pid" 'select(.processes != null) | .processes[] | select(.pid == $pid)' \
  "$scratch/smi" >/dev/null 2>&1; then
  fail "NVML lists the checkpointed process"
fi

# Restores that the driver refuses, each leaving it checkpointed.
expect_result CUDA_ERROR_INVALID_VALUE restore --pair 0=1            # device 1 missing
expect_result CUDA_ERROR_INVALID_VALUE restore --pair 0=1 --pair 1=1 # device 1 twice
[ "$(state)" = checkpointed ] || fail "after refused restores: $(state)"
# Another process takes device 1's room: no room to restore there.
CUDA_VISIBLE_DEVICES=1 "$client" job --mem $((3 * GiB)) --ready "$scratch/hog.ready" --seconds 60 \
  >/dev/null &
hog=$!
wait_file "$scratch/hog.ready"
expect_result CUDA_ERROR_OUT_OF_MEMORY restore --pair 0=1 --pair 1=0
[ "$(state)" = checkpointed ] || fail "after a restore without room: $(state)"
[ "$(used 0)" -eq 0 ] || fail "a refused restore left $(used 0) bytes on device 0"
kill "$hog"; wait "$hog" 2>/dev/null || true
tries=0
until [ "$(used 1)" -eq 0 ]; do
  [ "$tries" -lt 500 ] || fail "device 1 still holds $(used 1) bytes after its process ended"
  sleep 0.01; tries=$((tries + 1))
done

# Onto device 1: the bytes and the context follow, the job goes on there.
ctl restore --pair 0=1 --pair 1=0 >"$scratch/restore" || { cat "$scratch/restore"; fail "restore"; }
[ "$(state)" = locked ] || fail "after restore: $(state)"
[ "$(used 1)" -eq $((GiB + 256 * MiB)) ] || fail "device 1 holds $(used 1) bytes after the restore"
[ "$(used 0)" -eq 0 ] || fail "device 0 holds $(used 0) bytes after the restore"
kernels_1=$(kernels 1)
kernels_0=$(kernels 0)
expect_result CUDA_SUCCESS unlock
unlocked_at=$(date +%s%N)
locked_ms=$(( (unlocked_at - locked_at) / 1000000 ))
tries=0
until [ "$(kernels 1)" -gt "$kernels_1" ]; do
  [ "$tries" -lt 1000 ] || fail "no kernel ran on device 1 after the restore"
  sleep 0.01; tries=$((tries + 1))
done
touch "$scratch/job.stop"
wait "$job" || { cat "$scratch/job.out"; fail "the job failed after its restore"; }
jq -e '.intact' "$scratch/job.out" >/dev/null || fail "the job's data changed: $(cat "$scratch/job.out")"
uuid1=$("$client" stats | jq -r 'select(.device==1) | .uuid')
jq -e --arg u "$uuid1" '.uuid_end == $u and .uuid_start != $u' "$scratch/job.out" >/dev/null ||
  fail "the job's device 0 is not device 1 after the restore: $(cat "$scratch/job.out")"
gap=$(jq -r .longest_gap_ms "$scratch/job.out")
# Measured from outside, the lock began before and ended after the job's
# longest gap; the gap must hold most of that span.
[ "$gap" -ge $((locked_ms - 200)) ] ||
  fail "the job's longest gap was $gap ms while it was locked for $locked_ms ms"
[ "$(kernels 0)" -eq "$kernels_0" ] || fail "kernels still ran on device 0 after the restore"

# A lock that cannot get the driver within its timeout: CUDA_ERROR_NOT_READY,
# and the process stays running.
"$client" hold --ms 1500 --ready "$scratch/hold.ready" &
holder=$!
wait_file "$scratch/hold.ready"
pid=$(cat "$scratch/hold.ready")
expect_result CUDA_ERROR_NOT_READY lock --timeout-ms 100
[ "$(state)" = running ] || fail "after a lock timed out: $(state)"
wait "$holder"

# A process that sees one device (CUDA_VISIBLE_DEVICES=1) checkpointed it
# alone: restored onto device 0, which it does not see, refused; in place, fine.
CUDA_VISIBLE_DEVICES=1 "$client" job --mem $((256 * MiB)) --ready "$scratch/one.ready" \
  --seconds 4 >"$scratch/one.out" &
one=$!
wait_file "$scratch/one.ready"
pid=$(cat "$scratch/one.ready")
expect_result CUDA_SUCCESS lock
expect_result CUDA_SUCCESS checkpoint
expect_result CUDA_ERROR_INVALID_VALUE restore --pair 1=0
expect_result CUDA_SUCCESS restore
expect_result CUDA_SUCCESS unlock
wait "$one" || fail "the one-device job failed"

# Another chip type (fewer SMs on device 1): refused.
rm -f "$GPUSHARE_SIM_STATE"
export GPUSHARE_SIM_SMS=108,132
"$client" job --mem $((256 * MiB)) --ready "$scratch/chip.ready" --seconds 4 >/dev/null &
chip=$!
wait_file "$scratch/chip.ready"
pid=$(cat "$scratch/chip.ready")
expect_result CUDA_SUCCESS lock
expect_result CUDA_SUCCESS checkpoint
expect_result CUDA_ERROR_INVALID_VALUE restore --pair 0=1 --pair 1=0
expect_result CUDA_SUCCESS restore
expect_result CUDA_SUCCESS unlock
wait "$chip" || fail "the job refused another chip type failed"
echo "locked for $locked_ms ms; restore took $(jq -r .wall_ms "$scratch/restore") ms"
