#!/usr/bin/env bash
# A coordinator stopped by SIGTERM (gpushare-ctl(1), serve) exits 0 and
# removes its socket, and its running jobs continue on the limits it last
# set, not on those they started with: one lowered, one raised, one class
# changed; a job it had paused goes on launching. They register again with
# the next coordinator on those limits.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"
gib=1073741824

# Raising a limit past the one a job started with takes root or the admin
# group: run by another user, the test makes that user's group the admin.
admin=()
[ "$(id -u)" -eq 0 ] || admin=(--admin-group "$(id -gn)")
start_coordinator "${admin[@]}"
start_job low GPUSHARE_JOB=low GPUSHARE_MEM_LIMIT=4GiB
start_job high GPUSHARE_JOB=high GPUSHARE_MEM_LIMIT=2GiB GPUSHARE_QOS=opportunistic
gpushare-ctl set low --mem-limit 1GiB >/dev/null
gpushare-ctl set high --mem-limit 6GiB qos=production >/dev/null
gpushare-ctl pause high >/dev/null
job_say high status | jq -e '.paused' >/dev/null || fail "job high is not paused"
before=$(wc -l <"$scratch/job-high.out")
echo "launch 5" >&"${job_fd[high]}"   # held by the pause

stop_coordinator TERM
[ "$coordinator_status" -eq 0 ] || fail "serve exited $coordinator_status on SIGTERM"
[ ! -e "$GPUSHARE_SOCKET" ] || fail "the socket is still there after SIGTERM"
wait_for "the paused job's launches after the coordinator stopped" 5 \
  lines_above "$scratch/job-high.out" "$before"
tail -n 1 "$scratch/job-high.out" | jq -e '.launches == 5 and .paused == false' >/dev/null ||
  fail "job high's launches did not go through: $(tail -n 1 "$scratch/job-high.out")"

unregistered() { job_say "$1" status | jq -e '.registered == false'; }
wait_for "job low to notice" 5 unregistered low
wait_for "job high to notice" 5 unregistered high
# The lowered limit holds (2 GiB is refused, under the 4 GiB it started with).
job_say low alloc 2GiB | jq -e --argjson l "$gib" '.ok == false and .mem_limit_bytes == $l' \
  >/dev/null || fail "job low went back to its start limit"
job_say low alloc 512MiB | jq -e '.ok' >/dev/null || fail "job low cannot allocate under its limit"
# The raised limit and the class hold (5 GiB fits under 6, not under 2).
job_say high alloc 5GiB | jq -e --argjson l "$((6 * gib))" '.ok and .mem_limit_bytes == $l' \
  >/dev/null || fail "job high went back to its start limit"
job_say high status | jq -e '.qos == "production"' >/dev/null || fail "job high lost its class"

start_coordinator "${admin[@]}"
wait_for "both jobs to register again" 5 sh -c "[ \$(gpushare-ctl ls | jq -s length) -eq 2 ]"
gpushare-ctl ls | jq -se --argjson g "$gib" \
  'map({(.name): [.mem_limit_bytes, .qos]}) | add ==
   {"low": [$g, "production"], "high": [6 * $g, "production"]}' >/dev/null ||
  fail "the next coordinator does not have the last limits: $(gpushare-ctl ls)"
