#!/usr/bin/env bash
# Plays a hostile co-tenant: with XDG_RUNTIME_DIR unset (sudo, cron, batch
# jobs) a user's default socket is /tmp/gpushare-UID/gpushare.sock, and
# another user can create that directory first and run a coordinator of
# their own in it. The victim's job must not register there (it would take
# the attacker's limits and pauses), gpushare-ctl must refuse to talk to it,
# and gpushare-run must not hang or start anything there. A coordinator met
# through an explicit GPUSHARE_SOCKET that runs as another user is refused
# too (SO_PEERCRED on the client side).
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"
. "$e2e_dir/users.inc"

victim_dir=/tmp/gpushare-$victim
[ -e "$victim_dir" ] && skip "$victim_dir exists already"
remove_at_exit "$victim_dir"

# attacker_serve SOCKET: the attacker's coordinator, in the background.
attacker_serve() {
  "${as_attacker[@]}" gpushare-ctl --socket "$1" serve >"$scratch/attacker.$2" \
    2>>"$scratch/attacker.log" &
  wait_for "the attacker's coordinator on $1" 5 test -s "$scratch/attacker.$2"
}

# 1. The attacker takes the victim's default directory first.
"${as_attacker[@]}" mkdir -m 0777 "$victim_dir"
attacker_serve "$victim_dir/gpushare.sock" default

victim_env=(env -u XDG_RUNTIME_DIR -u GPUSHARE_SOCKET)
run_as=("${as_victim[@]}" "${victim_env[@]}")
start_job v1 GPUSHARE_JOB=victim GPUSHARE_QOS=production GPUSHARE_MEM_LIMIT=4GiB GPUSHARE_DEBUG=1
run_as=()
# The job's client tries at start (bounded) and again in its thread: wait
# until it has said why it refuses, then check it never registered.
wait_for "the victim's job to refuse the directory" 5 \
  grep -q "refusing the coordinator socket directory $victim_dir: owned by another user" \
  "$scratch/job-v1.err"
job_say v1 status | jq -e '.registered == false and .mem_limit_bytes == 4294967296' >/dev/null ||
  fail "the victim's job registered with the attacker's coordinator: $(job_say v1 status)"
"${as_attacker[@]}" gpushare-ctl --socket "$victim_dir/gpushare.sock" ls >"$scratch/attacker-ls"
[ -s "$scratch/attacker-ls" ] && fail "the attacker's coordinator lists a job: $(cat "$scratch/attacker-ls")"
end_job v1

expect_exit 1 "${as_victim[@]}" "${victim_env[@]}" gpushare-ctl ls
expect_grep "^gpushare-ctl: error: refusing the coordinator socket $victim_dir/gpushare.sock: $victim_dir is owned by uid $attacker, not by this user$" \
  "$scratch/err"

expect_exit 0 "${as_victim[@]}" "${victim_env[@]}" gpushare-run -- true
expect_grep "^gpushare-run: warning: refusing the coordinator socket $victim_dir/gpushare.sock: .*owned by uid $attacker" \
  "$scratch/err"

# 2. A socket named explicitly, in a directory open to all, served by the
# attacker: the directory says nothing, the peer's uid does.
attacker_serve "$open_dir/gpushare.sock" explicit
run_as=("${as_victim[@]}")
start_job v2 GPUSHARE_SOCKET="$open_dir/gpushare.sock" GPUSHARE_MEM_LIMIT=4GiB GPUSHARE_DEBUG=1
run_as=()
wait_for "the victim's job to refuse the coordinator" 5 \
  grep -q "refusing the coordinator on $open_dir/gpushare.sock: it runs as uid $attacker, not as this user or root" \
  "$scratch/job-v2.err"
job_say v2 status | jq -e '.registered == false' >/dev/null || fail "the victim's job registered"
end_job v2
expect_exit 1 "${as_victim[@]}" gpushare-ctl --socket "$open_dir/gpushare.sock" ls
expect_grep "^gpushare-ctl: error: refusing the coordinator on $open_dir/gpushare.sock: it runs as uid $attacker, not as this user or root$" \
  "$scratch/err"

# 3. Control: root's coordinator on the same open socket path is trusted by
# the victim (root may run the node coordinator anywhere).
kill "$(jq -r .pid "$scratch/attacker.explicit")"
wait_for "the attacker's coordinator to leave" 5 sh -c "! test -S '$open_dir/gpushare.sock'"
GPUSHARE_SOCKET="$open_dir/gpushare.sock" start_coordinator
run_as=("${as_victim[@]}")
start_job v3 GPUSHARE_SOCKET="$open_dir/gpushare.sock" GPUSHARE_MEM_LIMIT=4GiB
run_as=()
job_say v3 wait-registered 1 | jq -e '.registered == true' >/dev/null ||
  fail "the victim's job does not register with root's coordinator"
end_job v3
echo "coord-hijack: ok"
