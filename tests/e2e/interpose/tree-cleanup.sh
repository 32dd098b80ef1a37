#!/usr/bin/env bash
# The job's tree file lives exactly as long as the job,
# however its processes die. gpushare-run creates it and leaves a janitor
# that removes it once no process of the job is left:
#  - the job's first process is SIGKILLed while a child holds memory: the
#    file stays, and still counts the child's charge for a process joining
#    it; it goes when the child exits;
#  - every process of the job is SIGKILLed: the file goes too (the first
#    process used to remove it in a destructor, which SIGKILL skips, leaving
#    one file in /dev/shm per killed job);
#  - the first process exits while a descendant that has not used a device
#    yet lives on: the janitor waits for that one too (it finds it by its
#    environment), so it joins the tree when it starts using the GPU.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"

export GPUSHARE_SIM_MEMORY=16GiB
run=(gpushare-run --sim --no-coordinator --mem-limit 1GiB --)

# $1 the client; $2 "child" to leave the child running, "all" to kill it
# too. The first process (this shell) always dies by SIGKILL.
cat >"$scratch/killed.sh" <<'SCRIPT'
set -eu
echo "$GPUSHARE_TREE" >tree.path
"$1" alloc 512MiB hold <hold.fifo >child.out 2>child.err &
echo $! >child.pid
until grep -q '^hold ready' child.out; do sleep 0.01; done
if [ "$2" = all ]; then kill -KILL $!; fi
kill -KILL $$
SCRIPT

gone() { ! test -e "$1"; }

# 1. The first process dies, a child goes on.
mkfifo "$scratch/hold.fifo"
"${run[@]}" bash "$scratch/killed.sh" "$gs_client" child >/dev/null 2>&1 &
run_pid=$!
exec {hold_fd}>"$scratch/hold.fifo"
status=0
wait "$run_pid" || status=$?
[ "$status" -eq 137 ] || fail "the job's first process was not SIGKILLed (status $status)"
tree=$(cat "$scratch/tree.path")
case $tree in /dev/shm/gpushare-tree-*) ;; *) fail "unexpected tree path '$tree'" ;; esac
[ -e "$tree" ] || fail "the tree file went with the first process while its child holds memory"
# A process joining the tree now is held to the tree's sum: 512 MiB of the
# child's plus 768 MiB is over the 1 GiB limit; 512 MiB fits.
client GPUSHARE_TREE="$tree" GPUSHARE_MEM_LIMIT=1GiB -- "$gs_client" alloc 768MiB alloc 512MiB
expect_grep "^alloc bytes=805306368 result=2$" "$scratch/out"
expect_grep "^alloc bytes=536870912 result=0$" "$scratch/out"
eval "exec $hold_fd>&-"  # the child exits
wait_for() {
  local what=$1; shift
  local deadline=$(( $(date +%s) + 10 ))
  until "$@"; do
    [ "$(date +%s)" -lt "$deadline" ] || fail "timed out after 10s waiting for $what"
    sleep 0.01
  done
}
wait_for "the tree file to go with the job's last process" gone "$tree"

# 2. Every process of the job dies by SIGKILL.
rm -f "$scratch/tree.path" "$scratch/child.out"
"${run[@]}" bash "$scratch/killed.sh" "$gs_client" all >/dev/null 2>&1 </dev/null &
run_pid=$!
exec {hold_fd}>"$scratch/hold.fifo"
status=0
wait "$run_pid" || status=$?
[ "$status" -eq 137 ] || fail "the job was not SIGKILLed (status $status)"
eval "exec $hold_fd>&-"
tree=$(cat "$scratch/tree.path")
wait_for "the tree file of a SIGKILLed job to be removed" gone "$tree"
# 3. The first process exits before its descendant uses a device.
cat >"$scratch/late.sh" <<'SCRIPT'
set -eu
echo "$GPUSHARE_TREE" >tree.path
( until [ -e go ]; do sleep 0.01; done
  exec "$1" alloc 64MiB ) >late.out 2>late.err &
echo $! >late.pid
SCRIPT
rm -f "$scratch/tree.path"
GPUSHARE_LOG=debug "${run[@]}" bash "$scratch/late.sh" "$gs_client" >/dev/null 2>&1 ||
  fail "the job failed"
tree=$(cat "$scratch/tree.path")
late=$(cat "$scratch/late.pid")
# The janitor of this file (the process holding it open) must come to wait
# on the descendant: a pidfd of it among its descriptors.
janitor_waits_on_late() {
  local fd pid
  for fd in /proc/[0-9]*/fd/*; do
    [ "$(readlink "$fd" 2>/dev/null)" = "$tree" ] || continue
    pid=${fd#/proc/}; pid=${pid%%/*}
    grep -qx "Pid:[[:space:]]*$late" /proc/"$pid"/fdinfo/* 2>/dev/null && janitor=$pid && return 0
  done
  return 1
}
wait_for "the janitor to wait on the job's remaining process" janitor_waits_on_late
# It goes by a name of its own, not by the job's command line.
[ "$(tr '\0' ' ' </proc/"$janitor"/cmdline)" = "gpushare-tree --tree-janitor $tree " ] ||
  fail "the janitor's command line is '$(tr '\0' ' ' </proc/"$janitor"/cmdline)'"
[ "$(cat /proc/"$janitor"/comm)" = gpushare-tree ] || fail "the janitor's name is $(cat /proc/"$janitor"/comm)"
[ -e "$tree" ] || fail "the tree file went while a process of the job lives"
touch "$scratch/go"
wait_for "the late process to finish" sh -c "grep -q '^alloc' '$scratch/late.out'"
expect_grep "joined the job's process tree" "$scratch/late.err"
wait_for "the tree file to go with the late process" gone "$tree"
echo "interpose-tree-cleanup: ok (the file outlived its first process for its child, not the job)"
