#!/usr/bin/env bash
# After a live limit decrease below what a job holds, the job's NVML view
# stays consistent: used is at most total (tools choke on more, and a
# job once saw 956 MiB used of 512 MiB), and for the _v2 call total =
# used + free + reserved.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"

start_coordinator
start_held job -- gpushare-run --sim --name clampjob --mem-limit 2GiB -- \
  "$gs_client" alloc 956MiB hold nvml
wait_for "the job's 956 MiB in ls" 5 show_has clampjob ".mem_used_bytes >= 1002438656"
expect_exit 0 gpushare-ctl set clampjob --mem-limit 512MiB
release job
{ wait "${job_pid[job]}"; } || fail "the job failed: $(cat "$scratch/job-job.err")"
line=$(grep '^nvml ' "$scratch/job-job.out") || fail "no nvml line: $(cat "$scratch/job-job.out")"
value() { grep -o " $1=[0-9]*" <<<"$line" | cut -d= -f2; }
total=$(value total) used=$(value used)
[ "$total" -eq 536870912 ] || fail "NVML total is $total, not the 512 MiB limit: $line"
[ "$used" -le "$total" ] || fail "NVML says $used bytes used of $total: $line"
v2_total=$(value v2_total) v2_used=$(value v2_used)
v2_free=$(value v2_free) v2_reserved=$(value v2_reserved)
[ -n "$v2_total" ] || fail "no _v2 figures: $line"
[ "$v2_used" -le "$v2_total" ] || fail "_v2 says $v2_used used of $v2_total: $line"
[ $(( v2_used + v2_free + v2_reserved )) -eq "$v2_total" ] ||
  fail "_v2 total $v2_total is not used $v2_used + free $v2_free + reserved $v2_reserved"
echo "interpose-nvml-clamp: ok ($line)"
