#!/usr/bin/env bash
# A job whose process ends by exec'ing another program (a script ending with
# `exec`, as Slurm batch scripts often do), run with the interposer
# preloaded by hand (no gpushare-run, so no janitor):
#  - the tree file the first process created is removed when the program it
#    exec'd exits (it was left in /dev/shm for the user's next job to sweep);
#  - a program that exec's another gives its charges up with its image: the
#    next program starts within the job's limit again (the old image's
#    charge stayed in the tree's sum, and the new program was refused).
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
export GPUSHARE_SIM_MEMORY=16GiB
unset GPUSHARE_TREE

# 1. bash creates the tree file and execs a program.
env LD_PRELOAD="$interposer" bash -c 'echo "$GPUSHARE_TREE" >tree.path; exec /bin/true'
tree=$(cat tree.path)
case $tree in /dev/shm/gpushare-tree-*) ;; *) fail "unexpected tree path '$tree'" ;; esac
[ -e "$tree" ] && fail "the tree file $tree outlived the job that ended with exec"

# ... and a CUDA program, under gpushare-workload's usual limits.
env LD_PRELOAD="$interposer" GPUSHARE_MEM_LIMIT=1GiB bash -c \
  'echo "$GPUSHARE_TREE" >tree.path; exec "$1" alloc 256MiB' bash "$gs_client" >"$scratch/out"
expect_grep "^alloc bytes=268435456 result=0$" "$scratch/out"
tree=$(cat tree.path)
[ -e "$tree" ] && fail "the tree file $tree outlived a CUDA program exec'd at the end of a job"

# 2. A CUDA program exec's another: the second gets the whole limit.
client GPUSHARE_MEM_LIMIT=1GiB -- "$gs_client" alloc 768MiB exec "$gs_client" alloc 768MiB
expect_grep "^alloc bytes=805306368 result=0$" "$scratch/out"
[ "$(grep -c '^alloc bytes=805306368 result=0$' "$scratch/out")" -eq 2 ] ||
  fail "the program exec'd after 768 MiB was held to the old image's charge: $(cat "$scratch/out")"
echo "interpose-tree-exec: ok"
