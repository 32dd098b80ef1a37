#!/usr/bin/env bash
# Authorisation by peer credentials, with two real uids: a user acts only on
# their own jobs, may lower their job's limit and raise it back to its start
# limit but not above, and may not make it production; root, and members of
# the admin group, may do all of it. A refused request changes nothing and
# says why.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"

[ "$(id -u)" -eq 0 ] || skip "needs root to run jobs as two users"
command -v setpriv >/dev/null || skip "needs setpriv (util-linux)"
user=gpushare-test
admin_group=gpushare-test-admin
id "$user" >/dev/null 2>&1 || useradd -M -r -s /usr/sbin/nologin "$user" 2>/dev/null || id "$user" >/dev/null ||
  skip "cannot create user $user"
getent group "$admin_group" >/dev/null || groupadd -r "$admin_group" 2>/dev/null ||
  getent group "$admin_group" >/dev/null || skip "cannot create group $admin_group"
uid=$(id -u "$user")
gid=$(id -g "$user")
admin_gid=$(getent group "$admin_group" | cut -d: -f3)
as_user=(setpriv --reuid="$uid" --regid="$gid" --clear-groups)
as_admin=(setpriv --reuid="$uid" --regid="$gid" --groups="$admin_gid")

# The user must reach the socket: let others through the scratch directory.
chmod 0711 "$scratch"
start_coordinator --admin-group "$admin_group"
start_job mine GPUSHARE_JOB=mine GPUSHARE_QOS=opportunistic GPUSHARE_MEM_LIMIT=4GiB
run_as=("${as_user[@]}")
start_job theirs GPUSHARE_JOB=theirs GPUSHARE_QOS=opportunistic GPUSHARE_MEM_LIMIT=4GiB
run_as=()
show_has theirs '.uid == $uid' --argjson uid "$uid" ||
  fail "the job's uid is not the user's"

record() { gpushare-ctl show "$1" | jq -c '[.mem_limit_bytes, .qos, .state, .name]'; }
unchanged() {  # JOB BEFORE
  [ "$(record "$1")" = "$2" ] || fail "a refused request changed job $1: $(record "$1")"
}

# The user may see everything...
expect_exit 0 "${as_user[@]}" gpushare-ctl ls
[ "$(jq -s length "$scratch/out")" -eq 2 ] || fail "the user cannot list every job"

# ...but not touch root's job.
before=$(record mine)
for request in "pause mine" "resume mine" "set mine --mem-limit 1GiB"; do
  expect_exit 1 "${as_user[@]}" gpushare-ctl $request
  expect_grep "^gpushare-ctl: error: permission denied: job 1 belongs to uid 0, not to uid $uid$" \
    "$scratch/err"
  [ -s "$scratch/out" ] && fail "a refused request printed a record"
done
unchanged mine "$before"

# Their own job: lower, raise back to the start limit, pause, resume.
expect_exit 0 "${as_user[@]}" gpushare-ctl set theirs --mem-limit 1GiB
job_say theirs alloc 2GiB | jq -e '.ok == false' >/dev/null || fail "the lowered limit does not hold"
expect_exit 0 "${as_user[@]}" gpushare-ctl set theirs --mem-limit 4GiB
expect_exit 0 "${as_user[@]}" gpushare-ctl pause theirs
expect_exit 0 "${as_user[@]}" gpushare-ctl resume theirs
expect_exit 0 "${as_user[@]}" gpushare-ctl set theirs name=renamed

# Not above the start limit, not production; each refusal changes nothing.
before=$(record renamed)
expect_exit 1 "${as_user[@]}" gpushare-ctl set renamed --mem-limit 5GiB name=sneaky
expect_grep "^gpushare-ctl: error: permission denied: only root or members of group '$admin_group' may raise a memory limit above the one the job started with \(4GiB; asked for 5GiB\)$" \
  "$scratch/err"
unchanged renamed "$before"
expect_exit 1 "${as_user[@]}" gpushare-ctl set renamed mem-limit=none
unchanged renamed "$before"
expect_exit 1 "${as_user[@]}" gpushare-ctl set renamed qos=production
expect_grep "permission denied: only root or members of group '$admin_group' may make a job production" \
  "$scratch/err"
unchanged renamed "$before"
job_say theirs alloc 4GiB | jq -e '.ok' >/dev/null || fail "the user's own 4 GiB start limit no longer holds"

# The admin group may do what root may, on anyone's job.
expect_exit 0 "${as_admin[@]}" gpushare-ctl set renamed --mem-limit 8GiB qos=production
jq -e '.mem_limit_bytes == 8589934592 and .qos == "production"' "$scratch/out" >/dev/null ||
  fail "the admin group could not raise the limit"
expect_exit 0 "${as_admin[@]}" gpushare-ctl pause mine
# And root may.
expect_exit 0 gpushare-ctl resume mine
expect_exit 0 gpushare-ctl set renamed --mem-limit 16GiB
expect_grep "uid $uid set mem-limit=5GiB name=sneaky: permission denied" "$scratch/coordinator.log"
