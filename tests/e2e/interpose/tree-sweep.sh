#!/usr/bin/env bash
# A job started without gpushare-run (the interposer preloaded
# by hand, or by the Slurm TaskProlog) has no janitor; when all its
# processes are killed, its tree file in /dev/shm is left behind. The next
# process of the same user that starts a tree removes such files, and only
# those: a file whose creator lives, or that a live process names in its
# environment, stays.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"  # wait_for

uid=$(id -u)
# The tree file a process created (its creator pid is at byte 8).
tree_of() {
  local file
  for file in /dev/shm/gpushare-tree-"$uid"-*; do
    [ -f "$file" ] || continue
    [ "$(od -An -t d4 -j 8 -N 4 "$file" 2>/dev/null | tr -d ' ')" = "$1" ] && echo "$file" && return 0
  done
  return 1
}
preload=(env -u GPUSHARE_TREE LD_PRELOAD="$interposer")

# 1. A job whose only process is killed leaves its file.
"${preload[@]}" sleep 60 &
killed=$!
wait_for "the first job's tree file" 5 tree_of "$killed"
killed_tree=$(tree_of "$killed")
# 2. A job whose first process is killed but whose child lives (the child
#    names the file in its environment, inherited at exec).
"${preload[@]}" sh -c 'sleep 60 & echo $! >"$1"; wait' sh "$scratch/child" &
parent=$!
wait_for "the second job's child" 5 test -s "$scratch/child"
wait_for "the second job's tree file" 5 tree_of "$parent"
parent_tree=$(tree_of "$parent")
# 3. A job that lives.
"${preload[@]}" sleep 60 &
alive=$!
wait_for "the third job's tree file" 5 tree_of "$alive"
alive_tree=$(tree_of "$alive")
kill -9 "$killed" "$parent"
wait "$killed" "$parent" 2>/dev/null || true
[ -e "$killed_tree" ] || fail "the killed job's file went before any sweep"

"${preload[@]}" true
[ ! -e "$killed_tree" ] || fail "the next job did not remove the killed job's file $killed_tree"
[ -e "$parent_tree" ] || fail "the file a live child names was removed"
[ -e "$alive_tree" ] || fail "a live job's file was removed"

kill "$(cat "$scratch/child")" "$alive"
wait "$alive" 2>/dev/null || true
wait_for "the child to be gone" 5 sh -c "! kill -0 $(cat "$scratch/child") 2>/dev/null"
"${preload[@]}" true
[ ! -e "$parent_tree" ] || fail "the second job's file stayed after its child ended"
