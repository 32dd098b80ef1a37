#!/usr/bin/env bash
# A job on several GPUs (gpushare-ctl(1)): `ls` sums its memory figures over
# its GPUs and lists each in `devices`; `node` gives each GPU its own
# record; a limit is per GPU, so `set JOB 50%` gives each GPU half of its
# own memory, and an allocation is checked against its GPU's limit alone.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"
gib=1073741824

# Raising a limit past the one a job started with takes root or the admin
# group: run by another user, the test makes that user's group the admin.
admin=()
[ "$(id -u)" -eq 0 ] || admin=(--admin-group "$(id -gn)")
start_coordinator "${admin[@]}"
# Two GPUs of 8 GiB (UUIDs ...0f and ...10), 3 GiB each to start with.
start_job wide GPUSHARE_JOB=wide GPUSHARE_MEM_LIMIT=3GiB -- --devices 2 --mem-total 8GiB
job_say wide alloc 1GiB 0 | jq -e '.ok' >/dev/null || fail "1 GiB on GPU 0 was refused"
job_say wide alloc 2GiB 1 | jq -e '.ok' >/dev/null || fail "2 GiB on GPU 1 was refused"
job_say wide alloc 2GiB 1 | jq -e '.ok == false' >/dev/null || fail "GPU 1 went past its 3 GiB"
wait_for "telemetry" 5 show_has wide ".mem_used_bytes == $((3 * gib))"

expect_exit 0 gpushare-ctl show wide
jq -e --argjson g "$gib" '
  .mem_used_bytes == 3 * $g and .mem_limit_bytes == 6 * $g and
  ([.devices[] | [.uuid, .mem_total_bytes, .mem_used_bytes, .mem_limit_bytes, .start_limit_bytes]] ==
   [["GPU-00010203-0405-0607-0809-0a0b0c0d0e0f", 8 * $g, 1 * $g, 3 * $g, 3 * $g],
    ["GPU-00010203-0405-0607-0809-0a0b0c0d0e10", 8 * $g, 2 * $g, 3 * $g, 3 * $g]])' \
  "$scratch/out" >/dev/null || fail "unexpected record: $(cat "$scratch/out")"

# The node's totals sum its devices' memory; each device counts the job,
# the node counts it once (gpushare-ctl(1), node).
expect_exit 0 gpushare-ctl node
jq -se --argjson g "$gib" '
  [.[] | select(.kind == "device") | [.mem_used_bytes, .jobs, .production.mem_limit_bytes]] ==
    [[1 * $g, 1, 3 * $g], [2 * $g, 1, 3 * $g]] and
  (.[-1] | .kind == "node" and .devices == 2 and .jobs == 1 and .production.jobs == 1 and
   .paused_jobs == 0 and
   .mem_used_bytes == 3 * $g and .mem_total_bytes == 16 * $g and
   .production.mem_limit_bytes == 6 * $g)' "$scratch/out" >/dev/null ||
  fail "unexpected node report: $(cat "$scratch/out")"

# 50% of each GPU: 4 GiB each, 8 GiB in all.
expect_exit 0 gpushare-ctl set wide --mem-limit 50%
jq -e --argjson g "$gib" '.mem_limit_bytes == 8 * $g and
  ([.devices[].mem_limit_bytes] == [4 * $g, 4 * $g])' "$scratch/out" >/dev/null ||
  fail "50% is not half of each GPU: $(cat "$scratch/out")"
# Each GPU's allocations meet its own limit: GPU 1 now takes 2 GiB more
# (4 in all) but not 3; GPU 0 takes 3 more.
job_say wide alloc 2GiB 1 | jq -e --argjson g "$gib" '.ok and .mem_limit_bytes == 4 * $g' \
  >/dev/null || fail "GPU 1 did not get its new limit"
job_say wide alloc 1GiB 1 | jq -e '.ok == false' >/dev/null || fail "GPU 1 went past 4 GiB"
job_say wide alloc 3GiB 0 | jq -e '.ok' >/dev/null || fail "GPU 0 did not get its new limit"
