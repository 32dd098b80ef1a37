#!/usr/bin/env bash
# Plays a co-tenant who tries to join another user's job.
# A job's processes are grouped by the tree file they pass with their
# registration (a descriptor, SCM_RIGHTS), which the coordinator checks
# itself: a regular file owned by the registering uid and open to nobody
# else. Root's job here is two processes sharing a tree file; the attacker
#  1. names root's tree file in GPUSHARE_TREE (it cannot open it);
#  2. passes a descriptor of root's very tree file, once root's mistake
#     (chmod 0644) lets it open it;
#  3. claims to be in a tree, with the victim's path and inode in made-up
#     fields, and passes no descriptor;
#  4. passes a descriptor of its own private file, under root's job name.
# Each time the attacker is a job of its own, and root's job keeps its two
# processes, its limit and its name (a `set` by name still reaches it).
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"

[ "$(id -u)" -eq 0 ] || skip "needs root to play another user"
command -v setpriv >/dev/null || skip "needs setpriv (util-linux)"
attacker=$((20000 + RANDOM % 10000))
as_attacker=(setpriv --reuid="$attacker" --regid="$attacker" --clear-groups)
chmod 0711 "$scratch"
device=GPU-00010203-0405-0607-0809-0a0b0c0d0e0f

victim_tree="$scratch/victim.tree"
install -m 0600 /dev/null "$victim_tree"

start_coordinator
start_job v1 GPUSHARE_JOB=train GPUSHARE_MEM_LIMIT=4GiB GPUSHARE_TREE="$victim_tree"
start_job v2 GPUSHARE_JOB=train GPUSHARE_MEM_LIMIT=4GiB GPUSHARE_TREE="$victim_tree"
victim_pids=$(jq -nc --argjson a "${job_pid[v1]}" --argjson b "${job_pid[v2]}" '[$a, $b]')
root_job_intact() {
  gpushare-ctl ls >"$scratch/ls" || return 1
  jq -se --argjson pids "$victim_pids" '
    (map(select(.uid == 0)) | length == 1 and .[0].pids == $pids and .[0].name == "train" and
       .[0].mem_limit_bytes == 4294967296)' "$scratch/ls" >/dev/null
}
job_say v1 wait-registered 1 >/dev/null
job_say v2 wait-registered 1 >/dev/null
root_job_intact || fail "root's two processes are not one job: $(cat "$scratch/ls")"

# 1. Root's tree file by name: the attacker cannot open it.
run_as=("${as_attacker[@]}")
start_job a1 GPUSHARE_JOB=train GPUSHARE_TREE="$victim_tree" GPUSHARE_DEBUG=1
run_as=()
job_say a1 wait-registered 1 | jq -e '.registered' >/dev/null || fail "the attacker did not register"
expect_grep "no job tree file $victim_tree" "$scratch/job-a1.err"

# Raw registrations, each kept open (the reply comes, then the connection
# stays until the client's timeout or its end).
register() {  # NAME TREE_FIELDS [--pass FILE]
  local name=$1 fields=$2; shift 2
  echo '{"kind":"register","version":1,"protocol":1,"layout_version":10,"name":"'"$name"'","qos":"production"'"$fields"',"devices":[{"uuid":"'"$device"'","mem_total_bytes":17179869184,"requested_limit_bytes":null,"mem_limit_bytes":null}]}' |
    "${as_attacker[@]}" "$raw_client" --timeout-ms 30000 "$@" >"$scratch/raw-$name.out" 2>&1 &
  raw_pids+=($!)
  wait_for "the registration of $name" 5 grep -q '"kind":"registered"' "$scratch/raw-$name.out"
}
raw_pids=()
# 2. A descriptor of root's own tree file, readable by mistake.
chmod 0644 "$victim_tree"
register lax ',"tree":true' --pass "$victim_tree"
chmod 0600 "$victim_tree"
expect_grep "the tree file belongs to uid 0, not to the registering uid $attacker; it is a job of its own" \
  "$scratch/coordinator.log"
# 3. A claim, made-up identity fields, no descriptor.
register claim ',"tree":true,"tree_path":"'"$victim_tree"'","tree_inode":'"$(stat -c %i "$victim_tree")"
expect_grep "says it is part of a job's process tree but passed no tree file; it is a job of its own" \
  "$scratch/coordinator.log"
# 4. Its own private file, under root's job name.
own_tree="$scratch/own.tree"
install -m 0600 -o "$attacker" /dev/null "$own_tree"
register train ',"tree":true' --pass "$own_tree"

gpushare-ctl ls >"$scratch/ls"
root_job_intact || fail "an attacker joined root's job: $(cat "$scratch/ls")"
jq -se --argjson uid "$attacker" 'map(select(.uid == $uid)) | length == 4 and all(.[]; (.pids | length) == 1)' \
  "$scratch/ls" >/dev/null || fail "the attacker's registrations are not four jobs of one process: $(cat "$scratch/ls")"
# Root's `set train` acts on root's own job (both processes), not the copies.
expect_exit 0 gpushare-ctl set train --mem-limit 2GiB
jq -e --argjson pids "$victim_pids" '.uid == 0 and .pids == $pids' "$scratch/out" >/dev/null ||
  fail "root's set by name did not reach root's job: $(cat "$scratch/out")"
for id in v1 v2; do
  job_say "$id" status | jq -e '.mem_limit_bytes == 2147483648' >/dev/null ||
    fail "root's set did not reach process $id"
done
for pid in "${raw_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
echo "coord-tree-forged: ok"
