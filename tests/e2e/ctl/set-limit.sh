#!/usr/bin/env bash
# `set --mem-limit` changes a running job's limit: below what the job holds,
# its further allocations fail with out-of-memory and nothing it holds is
# taken away; raised again, it may allocate again. Percentages are of the
# job's device; "none" lifts the limit.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"

# Raising a limit past the one a job started with takes root or the admin
# group: run by another user, the test makes that user's group the admin.
admin=()
[ "$(id -u)" -eq 0 ] || admin=(--admin-group "$(id -gn)")
start_coordinator "${admin[@]}"
start_job train GPUSHARE_JOB=train GPUSHARE_MEM_LIMIT=4GiB -- --mem-total 16GiB
job_say train alloc 3GiB | jq -e '.ok' >/dev/null || fail "3 GiB under a 4 GiB limit failed"

expect_exit 0 gpushare-ctl set train --mem-limit 1GiB
jq -e '.kind == "job" and .mem_limit_bytes == 1073741824' "$scratch/out" >/dev/null ||
  fail "set did not print the new record"
job_say train alloc 1MiB >"$scratch/alloc"
jq -e '.ok == false and .error == "CUDA_ERROR_OUT_OF_MEMORY" and .mem_limit_bytes == 1073741824' \
  "$scratch/alloc" >/dev/null || fail "an allocation over the lowered limit succeeded"
# Nothing was taken away: the job still holds its 3 GiB, and ls says so.
job_say train status | jq -e '.mem_used_bytes == 3221225472' >/dev/null ||
  fail "lowering the limit changed what the job holds"
wait_for "telemetry to show 3 GiB" 2 \
  show_has train ".mem_used_bytes == 3221225472 and .mem_limit_bytes == 1073741824"

# KEY=VALUE properties, as gpushare-run -p takes them; 50% of 16 GiB.
expect_exit 0 gpushare-ctl set train mem-limit=50%
job_say train alloc 4GiB | jq -e '.ok and .mem_limit_bytes == 8589934592' >/dev/null ||
  fail "raising the limit to 50% did not let the job allocate"
expect_exit 0 gpushare-ctl set train mem=none
jq -e '.mem_limit_bytes == null' "$scratch/out" >/dev/null || fail "mem=none did not lift the limit"
job_say train alloc 9GiB | jq -e '.ok and .mem_limit_bytes == null' >/dev/null ||
  fail "no limit, yet the allocation failed"

# The other properties: a rename, and the class.
expect_exit 0 gpushare-ctl set train name=renamed qos=opportunistic
jq -e '.name == "renamed" and .qos == "opportunistic"' "$scratch/out" >/dev/null ||
  fail "name and qos did not change"
job_say train status | jq -e '.qos == "opportunistic"' >/dev/null ||
  fail "the job did not see its new class"

# Bad values are usage errors, refused before anything is sent.
expect_exit 2 gpushare-ctl set renamed --mem-limit 12apples
expect_grep "^gpushare-ctl: error: invalid mem-limit: " "$scratch/err"
expect_exit 2 gpushare-ctl set renamed gpu=1
expect_grep "^gpushare-ctl: error: property 'gpu' cannot change on a running job$" "$scratch/err"
expect_exit 2 gpushare-ctl set renamed
expect_grep "nothing to set" "$scratch/err"
