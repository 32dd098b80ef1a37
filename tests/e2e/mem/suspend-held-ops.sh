#!/usr/bin/env bash
# While a job is suspended its device memory is unmapped, so
# every call that would touch it must wait for the resume instead of
# failing: launches, allocations and 1D copies (mem-suspend), and memsets,
# 2D/3D and peer copies (this test, with a memset). A suspendable job holds
# 256 MiB, is suspended, and then sets its memory: the memset does not run
# while the job is suspended (no result yet), and after `resume` it
# succeeds and the job's next fill and check do too.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"
. "$e2e_dir/mem.inc"
export GPUSHARE_SIM_MEMORY=1GiB GPUSHARE_SIM_EVICT=off GPUSHARE_SIM_CTX_OVERHEAD=0

start_coordinator
gpushare-run --sim --suspendable --name held -- "$c" init ctx alloc:plain:256MiB fill:3 \
  ready:"$s/full" wait:"$s/suspended" memset:7 fill:5 check:5 >"$s/held.out" 2>"$s/held.err" &
held=$!
wait_for "the job's 256 MiB" 10 test -e "$s/full"
gpushare-ctl suspend held >"$s/suspend.json" || fail "suspend failed: $(cat "$s/suspend.json")"
jq -e '.state == "suspended"' "$s/suspend.json" >/dev/null || fail "not suspended: $(cat "$s/suspend.json")"
touch "$s/suspended"
# The job reaches its memset and waits there: its wait step is done, the
# memset has no result. (Read after the wait step's line appears; a memset
# that ran on unmapped memory would have printed a failure at once.)
wait_for "the job to pass its wait step" 10 grep -q '"step":"wait"' "$s/held.out"
kill -0 "$held" || fail "the suspended job exited: $(cat "$s/held.out" "$s/held.err")"
[ -z "$(field "$s/held.out" memset result)" ] ||
  fail "a suspended job's memset ran: $(cat "$s/held.out")"

gpushare-ctl resume held >"$s/resume.json" || fail "resume failed: $(cat "$s/resume.json")"
wait "$held" || fail "the job failed after resume: $(cat "$s/held.out" "$s/held.err")"
[ "$(field "$s/held.out" memset result)" = CUDA_SUCCESS ] &&
  [ "$(field "$s/held.out" check result)" = CUDA_SUCCESS ] || fail "after resume: $(cat "$s/held.out")"
