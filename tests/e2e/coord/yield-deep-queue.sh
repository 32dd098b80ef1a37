#!/usr/bin/env bash
# The yield signal with a deep queue, on the simulated GPU: a production job
# that launches a whole iteration at once (500 kernels of 4 ms) and then
# waits about 2 s in its synchronisation launches nothing for longer than
# idle_after (300 ms) and holds its busy mark past the second after which
# a mark without a heartbeat counts as stuck. Its held, live mark counts
# as activity and its interposer's client thread beats on the page while
# the mark is held (control_block.h), so a saturating opportunistic job
# keeps yielding and production keeps its speed (>= 0.9 of solo; 0.54
# before either, and below 0.9 with only one of the two).
# Then the production job is stopped (SIGSTOP) with its mark set: its
# heartbeat and telemetry stop with it, and the opportunistic job must run
# again (its mark is dropped a second after its last beat; the bound
# allows 8 s for 20 opportunistic iterations).
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
workload="$libexec/gpushare-workload"
common=(--mem 16MiB --verify 1MiB)
prod=("${common[@]}" --kernels-per-iter 500 --kernel-us 4000 --host-us 0)
opp=("${common[@]}" --kernels-per-iter 8 --kernel-us 2000)
# The mean iteration_ms of a --per-iteration output, past its first
# iteration (the coordinator's profile).
mean_ms() {
  jq -rs '[.[] | select(.kind == "workload-iteration") | .iteration_ms] | .[1:]
          | if length == 0 then "none" else add / length end' "$1"
}

start_coordinator
expect_exit 0 gpushare-run --sim --name solo -- "$workload" "${prod[@]}" --duration 8 --per-iteration
solo_ms=$(mean_ms "$scratch/out")
[ "$solo_ms" != none ] || fail "the solo run measured no iteration: $(cat "$scratch/out")"

gpushare-run --sim --opportunistic --name opp -- "$workload" "${opp[@]}" --duration 60 \
  --per-iteration >"$scratch/opp.out" 2>"$scratch/opp.err" &
opp_pid=$!
wait_for "the opportunistic job to run" 5 grep -q '"iteration":2,' "$scratch/opp.out"
gpushare-run --sim --name prod -- "$workload" "${prod[@]}" --duration 12 --per-iteration \
  >"$scratch/prod.out" 2>"$scratch/prod.err" &
prod_pid=$!
wait "$prod_pid" || fail "the production job failed: $(cat "$scratch/prod.err")"
with_ms=$(mean_ms "$scratch/prod.out")
echo "production iteration: solo $solo_ms ms, beside the opportunistic job $with_ms ms" >&2
[ "$with_ms" != none ] || fail "the paired run measured no iteration: $(cat "$scratch/prod.out")"
awk "BEGIN { exit !($solo_ms >= 0.9 * $with_ms) }" ||
  fail "production was not protected: $with_ms ms per iteration against $solo_ms ms solo"

# A stopped producer: its mark stays set, its beats stop.
gpushare-run --sim --name stopped -- "$workload" "${prod[@]}" --duration 60 --per-iteration \
  >"$scratch/stopped.out" 2>"$scratch/stopped.err" &
stopped_pid=$!
wait_for "the production job to iterate" 10 grep -q '"iteration":1,' "$scratch/stopped.out"
# Stopped in its synchronisation (its launches stand still between two
# looks), not while launching: a process stopped inside the simulated
# driver's lock would stall the other job's driver calls, which a real
# GPU's would not.
last=-1
in_sync() {
  local n
  n=$(gpushare-ctl ls | jq -s '[.[] | select(.name == "stopped") | .launches] | first // -1')
  [ "$n" -gt 0 ] && [ "$n" = "$last" ] && return 0
  last=$n
  return 1
}
wait_for "the production job to wait in its synchronisation" 10 in_sync
opp_count() { grep -c '"kind":"workload-iteration"' "$scratch/opp.out"; }
# Whatever happens next, the stopped job goes on (and so can end).
trap 'status=$?; kill -CONT "$stopped_pid" 2>/dev/null; (exit "$status"); cleanup' EXIT
kill -STOP "$stopped_pid"
at_stop=$(opp_count)
progressed() { [ "$(opp_count)" -ge $((at_stop + 20)) ]; }
wait_for "the opportunistic job to run beside a stopped producer" 8 progressed
echo "opportunistic iterations: $at_stop at the stop, $(opp_count) after" >&2
kill -CONT "$stopped_pid"
echo "coord-yield-deep-queue: ok"
