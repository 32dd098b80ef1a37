#!/usr/bin/env bash
# gpushare-probe memory's exits: 127 and 126 as gpushare-run for a command
# not found or not executable; a job that exits at once or never touches
# the GPU gives a clear record and status 0; a failing job status 1; a
# malformed cap, interval or duration status 2 before anything runs.
. "$(dirname "$0")/../common.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"

expect_exit 127 gpushare-probe memory --sim -- no-such-command-here
expect_grep "^gpushare-probe: error: 'no-such-command-here': No such file or directory$" "$scratch/err"
[ ! -s "$scratch/out" ] || fail "a command not found printed records"

printf 'not a program\n' >"$scratch/plain"
chmod 0644 "$scratch/plain"
expect_exit 126 gpushare-probe memory --sim -- "$scratch/plain"
expect_grep "^gpushare-probe: error: '$scratch/plain': Permission denied$" "$scratch/err"

for job in true "sleep 0.3"; do
  # shellcheck disable=SC2086
  expect_exit 0 gpushare-probe memory --sim --summary -- $job
  jq -e '.kind == "memory-profile" and .touched_gpu == false and .peak_mem_bytes == 0
    and .period_ms == null and .exit_status == 0 and (.note | test("never held device memory"))' \
    "$scratch/out" >/dev/null || { cat "$scratch/out"; fail "'$job' did not give a clear record"; }
done

expect_exit 1 gpushare-probe memory --sim --summary -- sh -c 'exit 3'
jq -e '.exit_status == 3' "$scratch/out" >/dev/null || fail "the job's status is not in the record"
expect_grep '^gpushare-probe: error: the job exited with status 3$' "$scratch/err"

check_usage() {
  local message=$1; shift
  expect_exit 2 gpushare-probe memory --sim "$@" -- true
  expect_grep "^gpushare-probe: error: $message" "$scratch/err"
  expect_grep "^Try 'gpushare-probe --help' for more information\.$" "$scratch/err"
  [ ! -s "$scratch/out" ] || fail "a usage error printed records"
}
check_usage "--caps: empty cap in '25%,,50%'" --caps 25%,,50%
check_usage "--caps: " --caps lots
check_usage "--caps: '0%' must be above 0%" --caps 0%
check_usage "--caps: size '150%' is more than 100%" --caps 50%,150%
check_usage "--caps: '0' must be above 0" --caps 0
check_usage "--interval: " --interval 5parsecs
check_usage "--interval: '0s' is out of range" --interval 0s
check_usage "--duration: " --duration -1s
expect_exit 2 gpushare-probe memory --sim
expect_grep "^gpushare-probe: error: command is required" "$scratch/err"
