#!/usr/bin/env bash
# A limit lowered live below what a job holds makes no violator of it
# (gpushare-ctl(1): `set --mem-limit` below the job's usage destroys
# nothing): under `serve --on-violation kill`, a job holding 2 GiB whose
# limit goes from 4 GiB to 1 GiB keeps running and is never marked; only
# memory obtained past the interposer is a violation. A job that escapes
# its limit, started after the change, is the clock: the coordinator kills
# it at its second check, so by then it has checked the lowered job at
# least twice too (no sleeps).
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"

export GPUSHARE_SIM_MEMORY=16GiB
attack="$libexec/tests/gs-attack"

start_coordinator --socket "$GPUSHARE_SOCKET" --on-violation kill
start_held lowered -- gpushare-run --sim --mem-limit 4GiB --name lowered -- "$attack" vmm 8 256MiB
expect_grep "^vmm done=8 held=2147483648 result=0$" "$scratch/job-lowered.out"
expect_exit 0 gpushare-ctl set lowered --mem-limit 1GiB
expect_grep '"mem_limit_bytes":1073741824' "$scratch/out"

start_held greedy -- gpushare-run --sim --mem-limit 1GiB --name greedy -- "$attack" unlimit 16 256MiB
status=0
{ wait "${job_pid[greedy]}"; } 2>/dev/null || status=$?
[ "$status" -eq 137 ] || fail "the escaping job exited $status, not by SIGKILL"
unset "job_pid[greedy]"

kill -0 "${job_pid[lowered]}" 2>/dev/null ||
  fail "the job whose limit was lowered under it was killed: $(grep lowered "$scratch/coordinator.log")"
if grep -q "'lowered' .* holds" "$scratch/coordinator.log"; then
  fail "the coordinator called the lowered job a violator: $(grep "'lowered' .* holds" "$scratch/coordinator.log")"
fi
gpushare-ctl ls | jq -e 'select(.name == "lowered") | .violation == null and .state == "running"' \
  >/dev/null || fail "the lowered job is marked: $(gpushare-ctl ls)"
end_job lowered
stop_coordinator
echo "coord-violation-lowered: ok (2 GiB held under a limit lowered to 1 GiB: not killed)"
