#!/usr/bin/env bash
# The legacy default stream's implicit synchronisation, as the driver
# documents it: work on the legacy stream (here a managed-memory prefetch,
# as a job's client thread issues for a spill) is waited for by work on
# blocking streams (created without CU_STREAM_NON_BLOCKING, and the
# per-thread default stream), and their work by the legacy stream's; a
# non-blocking stream waits for nothing. The check is what a stream
# synchronisation alone promises: two events recorded on the stream before
# it are complete, so cuEventElapsedTime answers (not CUDA_ERROR_NOT_READY),
# and the synchronisation lasted as long as the work it had to wait for.
. "$(dirname "$0")/../common.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
# A 768 MiB migration at 512 MiB/s takes 1.5 s.
export LD_LIBRARY_PATH="$libexec/sim" GPUSHARE_SIM_MEMORY=2GiB GPUSHARE_SIM_CTX_OVERHEAD=0 \
  GPUSHARE_SIM_MIGRATE_BANDWIDTH=512MiB
client="$libexec/tests/gpushare-cuda-client"
wall() { jq -r 'select(.step=="stream-elapsed") | .wall_ms' "$scratch/out"; }
at_least() { awk -v v="$1" -v lo="$2" 'BEGIN { exit !(v >= lo) }'; }
below() { awk -v v="$1" -v hi="$2" 'BEGIN { exit !(v < hi) }'; }

# run LABEL STEPS...: the client must succeed; the events must be complete.
run() {
  local label=$1; shift
  expect_exit 0 "$client" init ctx "$@"
  jq -e 'select(.step=="stream-elapsed") | .result == "CUDA_SUCCESS"' "$scratch/out" >/dev/null ||
    fail "$label: $(grep stream-elapsed "$scratch/out")"
}

# A prefetch on the legacy stream (the client's stream is 0 until it makes
# one), then events on a blocking stream: its synchronisation waits for the
# migration (a lower bound that load only lengthens).
run "legacy then blocking" alloc:managed:768MiB prefetch:host stream stream-elapsed
at_least "$(wall)" 1200 || fail "a blocking stream's sync returned after $(wall) ms, before the legacy stream's 1.5 s prefetch ended"

# The same through CU_STREAM_LEGACY and the per-thread default stream.
run "legacy then per-thread" stream:legacy alloc:managed:768MiB prefetch:host stream:per-thread \
  stream-elapsed
at_least "$(wall)" 1200 || fail "the per-thread stream's sync returned after $(wall) ms, before the legacy stream's prefetch ended"

# The other way round: a prefetch on a blocking stream, then events on the
# legacy stream wait for it.
run "blocking then legacy" alloc:managed:768MiB stream prefetch:host stream:legacy stream-elapsed
at_least "$(wall)" 1200 || fail "the legacy stream's sync returned after $(wall) ms, before a blocking stream's prefetch ended"

# A non-blocking stream is exempt: its events do not wait for the legacy
# stream's prefetch (an upper bound many times what it takes: it waits for
# nothing).
run "non-blocking" alloc:managed:768MiB prefetch:host stream:non-blocking stream-elapsed
below "$(wall)" 750 || fail "a non-blocking stream's sync waited $(wall) ms for the legacy stream's prefetch"
