#!/usr/bin/env bash
# The shared helpers that ask the coordinator about a job (coord.inc's
# show_has, mem.inc's resident and restored) fail when the job does not
# exist, where the bare `gpushare-ctl show JOB | jq -e FILTER` they replace
# passes (jq 1.6 exits 0 on empty input, and `sh -c` has no pipefail): a
# wait on a job that vanished would have passed at once. They pass on a
# job whose record satisfies the filter, and fail on one whose does not.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"
. "$e2e_dir/mem.inc"

start_coordinator
start_job train GPUSHARE_JOB=train
job_say train alloc 1GiB >/dev/null
wait_for "the job's 1 GiB in show" 5 show_has train ".mem_used_bytes == $((1024 * MiB))"

# The trap the helpers close: on a job that does not exist, the bare pipe
# passes (if this jq fails on empty input, the trap is gone, not the test).
sh -c "gpushare-ctl show ghost 2>/dev/null | jq -e '.mem_used_bytes == 0'" >/dev/null ||
  echo "note: this jq fails on empty input by itself"

show_has ghost '.mem_used_bytes == 0' 2>/dev/null && fail "show_has passed on a job that does not exist"
show_has ghost 'true' 2>/dev/null && fail "show_has passed on a job that does not exist (filter true)"
resident ghost 0 0 2>/dev/null && fail "resident passed on a job that does not exist"
restored ghost $$ 0 2>/dev/null && fail "restored passed on a job that does not exist"

# An existing job: the filter decides, jq's options reach it.
show_has train '.name == "train"' || fail "show_has failed on an existing job"
show_has train '.mem_used_bytes == $b' --argjson b $((1024 * MiB)) ||
  fail "show_has did not pass its jq options on"
show_has train '.mem_used_bytes == 0' && fail "show_has passed a filter that does not hold"

# A job that was there and is gone: a wait for it fails by its deadline.
end_job train
wait_for "the job gone from ls" 5 not_listed "${job_pid[train]}"
if (wait_for "a vanished job" 1 show_has train 'true') 2>/dev/null; then
  fail "a wait on a vanished job passed"
fi
