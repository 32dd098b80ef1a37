#!/usr/bin/env bash
# Suspend, bad input: another user may not suspend or resume a job
# (exit 1, permission denied, nothing changed), with two real uids; the
# owner may.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"

[ "$(id -u)" -eq 0 ] || skip "needs root to run jobs as two users"
command -v setpriv >/dev/null || skip "needs setpriv (util-linux)"
user=gpushare-test
id "$user" >/dev/null 2>&1 || useradd -M -r -s /usr/sbin/nologin "$user" 2>/dev/null ||
  id "$user" >/dev/null || skip "cannot create user $user"
as_user=(setpriv --reuid="$(id -u "$user")" --regid="$(id -g "$user")" --clear-groups)

chmod 0711 "$scratch"
start_coordinator
start_job mine GPUSHARE_JOB=mine GPUSHARE_QOS=opportunistic
record() { gpushare-ctl show mine | jq -c '[.state, .mem_suspended_bytes]'; }
before=$(record)

expect_exit 1 "${as_user[@]}" gpushare-ctl suspend mine
expect_grep "not allowed|permission|denied" "$scratch/err"
[ "$(record)" = "$before" ] || fail "another user's suspend changed the job: $(record)"
show_has mine '.state == "running"' || fail "$(record)"

# The owner (root here) may: a fake job holds no memory, so it is
# suspended at once, and another user may not resume it either.
expect_exit 0 gpushare-ctl suspend --no-wait mine
expect_exit 1 "${as_user[@]}" gpushare-ctl resume mine
expect_grep "not allowed|permission|denied" "$scratch/err"
show_has mine '.state == "suspending" or .state == "suspended"' ||
  fail "another user's resume changed the job: $(gpushare-ctl show mine)"
