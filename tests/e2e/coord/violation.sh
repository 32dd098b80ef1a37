#!/usr/bin/env bash
# Plays a job that lifts its own limit in-process: it
# maps a private copy of the coordinator's limits page over the shared one
# (mmap MAP_FIXED) and allocates 4 GiB under a 1 GiB limit. The interposer
# is cooperative and cannot stop that; the coordinator must not be blind to
# it. It checks what each job's process holds through NVML (the simulator's
# here) and, for a job over its limit: marks it in ls (a "violation" record,
# OVER-LIMIT in the table), warns in its log, and with --on-violation pause
# pauses it, with kill kills it. A job within its limit is never marked.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"

export GPUSHARE_SIM_MEMORY=16GiB
attack="$libexec/tests/gs-attack"
run=(gpushare-run --sim --mem-limit 1GiB)

# violation_of NAME: the job's violation record, "null" when it has none.
violation_of() {
  gpushare-ctl ls | jq -c --arg name "$1" 'select(.name == $name) | .violation'
}
is_violator() { [ "$(violation_of "$1")" != "null" ] && [ -n "$(violation_of "$1")" ]; }

for action in warn pause kill; do
  start_coordinator --socket "$GPUSHARE_SOCKET" --on-violation "$action"
  expect_grep "checking jobs' device memory through NVML; over the limit: $action" "$scratch/coordinator.log"

  # An honest neighbour within its limit, registered with the same coordinator.
  start_held "honest-$action" -- "${run[@]}" --name "honest-$action" -- "$attack" vmm 2 256MiB
  start_held "greedy-$action" -- "${run[@]}" --name "greedy-$action" -- "$attack" unlimit 16 256MiB
  expect_grep "^unlimit held=4294967296 result=0$" "$scratch/job-greedy-$action.out"

  if [ "$action" = kill ]; then
    # Killed at the second check over the limit, and forgotten with its process.
    status=0
    { wait "${job_pid[greedy-$action]}"; } 2>/dev/null || status=$?
    [ "$status" -eq 137 ] || fail "kill: the job exited $status, not by SIGKILL"
    unset "job_pid[greedy-$action]"
    expect_grep "job [0-9]+ 'greedy-kill' .* holds 4GiB .* against a limit of 1GiB.*; killed" \
      "$scratch/coordinator.log"
    [ "$(violation_of "honest-$action")" = "null" ] || fail "kill: the honest job is marked"
  else
    wait_for "the coordinator to see greedy-$action over its limit" 15 is_violator "greedy-$action"
    violation_of "greedy-$action" | jq -e --arg action "$action" \
      '.observed_bytes == 4294967296 and .limit_bytes == 1073741824 and .action == $action' \
      >/dev/null || fail "$action: wrong violation record: $(violation_of "greedy-$action")"
    [ "$(violation_of "honest-$action")" = "null" ] || fail "$action: the honest job is marked"
    expect_grep "job [0-9]+ 'greedy-$action' .* holds 4GiB .* against a limit of 1GiB" \
      "$scratch/coordinator.log"
    gpushare-ctl ls --format table >"$scratch/table"
    expect_grep "greedy-$action .*OVER-LIMIT\(4GiB\)" "$scratch/table"
    state=$(gpushare-ctl ls | jq -r --arg name "greedy-$action" 'select(.name == $name) | .state')
    want=running
    [ "$action" = pause ] && want=paused
    [ "$state" = "$want" ] || fail "$action: the job is $state, not $want"
  fi
  [ "$action" = kill ] || end_job "greedy-$action"
  end_job "honest-$action"
  stop_coordinator
done
echo "coord-violation: ok (4 GiB held under a 1 GiB limit: marked, warned, paused, killed)"
