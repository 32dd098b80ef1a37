#!/usr/bin/env bash
# gpushare-run --launch-queue: a launch the gate would hold is queued and the
# call returns at once, and whatever the program asks of the driver next
# comes after the queued launches. The job is held by a static cap
# (compute=20%, no coordinator), so twenty 2-ms kernels take about 180 ms
# of the GPU's time either way.
. "$(dirname "$0")/../common.inc"
use_sim
client="$libexec/tests/gpushare-cuda-client"
capped=(gpushare-run --sim --no-coordinator -p compute=20%)
step() {  # STEP FIELD: a field of the client's record for STEP in $scratch/out
  jq -r --arg step "$1" "select(.step == \$step) | .$2" "$scratch/out"
}
at_least() { awk -v v="$1" -v lo="$2" 'BEGIN { exit !(v >= lo) }'; }

# Without the queue the launching thread is held with its launches.
expect_exit 0 "${capped[@]}" -- "$client" init ctx stream kernel:spin launch:20:2000
held=$(step launch wall_ms)
at_least "$held" 120 || fail "without --launch-queue the capped launches returned in $held ms"

# With it the launches return at once; an event recorded after them, a
# query of their stream and a synchronous copy all come after them.
expect_exit 0 "${capped[@]}" --launch-queue -- "$client" init ctx stream kernel:spin mark \
  launch:20:2000 ?query elapsed
queued=$(step launch wall_ms)
at_least 40 "$queued" || fail "with --launch-queue the launches took $queued ms (held: $held ms)"
[ "$(step query result)" = CUDA_ERROR_NOT_READY ] ||
  fail "the stream's query did not see the queued kernels: $(step query result)"
elapsed=$(step elapsed elapsed_ms)
at_least "$elapsed" 120 ||
  fail "an event recorded after the queued launches completed after $elapsed ms: it overtook them"
expect_exit 0 "${capped[@]}" --launch-queue -- "$client" init ctx stream kernel:spin \
  alloc:plain:1048576 launch:20:2000 copy:dtoh:4096
copy=$(step copy wall_ms)
at_least "$copy" 120 || fail "a copy after the queued launches returned after $copy ms"

# The per-thread default stream is not queued (the submitting thread's
# would be another stream): held as before.
expect_exit 0 "${capped[@]}" --launch-queue -- "$client" init ctx stream:per-thread kernel:spin \
  launch:20:2000
per_thread=$(step launch wall_ms)
at_least "$per_thread" 120 || fail "launches on the per-thread stream were queued ($per_thread ms)"

# A bad value refuses CUDA, naming the variable.
GPUSHARE_LAUNCH_QUEUE=maybe expect_exit 1 gpushare-run --sim --no-coordinator -- "$client" init
expect_grep "invalid GPUSHARE_LAUNCH_QUEUE 'maybe': expected on or off" "$scratch/err"
echo "run-launch-queue: ok (held $held ms, queued $queued ms, event $elapsed ms, copy $copy ms)"
