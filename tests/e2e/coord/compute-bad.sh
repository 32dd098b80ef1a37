#!/usr/bin/env bash
# compute= values out of range or malformed are refused with a clear
# message, exit 2 from gpushare-ctl and 125 from gpushare-run, and nothing
# changes: the job keeps its cap, and the refused command never runs.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"

start_coordinator
start_job train GPUSHARE_JOB=train GPUSHARE_COMPUTE=40%
job_say train status | jq -e '.registered' >/dev/null
show_has train '.compute_cap_pct == 40' ||
  fail "the job's GPUSHARE_COMPUTE cap is not shown: $(gpushare-ctl show train)"

for bad in 0% 101% -5% abc 30%% "" 1e3%; do
  expect_exit 2 gpushare-ctl set train "compute=$bad"
  expect_grep "^gpushare-ctl: error: invalid compute share" "$scratch/err"
  [ ! -s "$scratch/out" ] || fail "a refused set printed data: $(cat "$scratch/out")"
  expect_exit 125 gpushare-run --no-coordinator -p "compute=$bad" -- touch "$scratch/ran"
  expect_grep "^gpushare-run: error: invalid compute share" "$scratch/err"
  [ ! -e "$scratch/ran" ] || fail "gpushare-run ran the command with compute=$bad"
done
show_has train '.compute_cap_pct == 40' ||
  fail "a refused set changed the cap: $(gpushare-ctl show train)"

# Good values, including the edges and lifting the cap.
expect_exit 0 gpushare-ctl set train compute=100%
jq -e '.compute_cap_pct == 100' "$scratch/out" >/dev/null || fail "compute=100% not applied"
expect_exit 0 gpushare-ctl set train compute=0.5
jq -e '.compute_cap_pct == 0.5' "$scratch/out" >/dev/null || fail "compute=0.5 not applied"
expect_exit 0 gpushare-ctl set train compute=none
jq -e '.compute_cap_pct == null' "$scratch/out" >/dev/null || fail "compute=none not applied"
expect_exit 0 gpushare-run --no-coordinator -p compute=12.5% -- env
expect_grep '^GPUSHARE_COMPUTE=12\.5%$' "$scratch/out"
