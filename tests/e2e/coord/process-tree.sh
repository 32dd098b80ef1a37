#!/usr/bin/env bash
# A job is the process tree of one gpushare-run, in the
# coordinator's view too. The job (a shell) starts two CUDA processes that
# hold memory at once; then:
#  - ls shows ONE job, with both pids, their summed usage and one limit
#    (before, each process was a job with the full limit again, and
#    `set NAME` was ambiguous);
#  - `set --mem-limit` reaches both processes: each is refused what would
#    take the tree's sum over the new limit, though it would fit the old one;
#  - a restarted coordinator sees one job again;
#  - the job stays while one process lives and goes with the last;
#  - the tree file is gone once the job is.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"

export GPUSHARE_SIM_MEMORY=16GiB
mib=1048576

cat >"$scratch/tree.sh" <<'SCRIPT'
set -eu
client=$1
echo "$GPUSHARE_TREE" >tree.path
# first: 512 MiB, then (after the limit drops to 900 MiB, and the second
# process has left) 450 MiB (962 MiB: refused) and 256 MiB (768 MiB: fits).
"$client" alloc 512MiB hold alloc 450MiB alloc 256MiB <first.fifo >first.out 2>first.err &
echo $! >first.pid
until grep -q '^hold ready' first.out; do sleep 0.01; done
# second: 256 MiB, then 256 MiB (1 GiB in the tree: refused) and 128 MiB.
"$client" alloc 256MiB hold alloc 256MiB alloc 128MiB <second.fifo >second.out 2>second.err &
echo $! >second.pid
wait
SCRIPT

start_coordinator
mkfifo "$scratch/first.fifo" "$scratch/second.fifo"
(close_job_fds; exec gpushare-run --sim --name treejob --mem-limit 1GiB -- \
  bash "$scratch/tree.sh" "$gs_client") >"$scratch/run.out" 2>"$scratch/run.err" &
run_pid=$!
exec {first_fd}>"$scratch/first.fifo"
exec {second_fd}>"$scratch/second.fifo"
# close_job_fds (coord.inc) keeps these out of a coordinator started later.
job_fd[first]=$first_fd
job_fd[second]=$second_fd
wait_for "both processes to hold their memory" 10 sh -c \
  "grep -q '^hold ready' '$scratch/first.out' && grep -q '^hold ready' '$scratch/second.out'"
first=$(cat "$scratch/first.pid")
second=$(cat "$scratch/second.pid")

# One job, both pids, the tree's usage (telemetry comes every 10 ms). The
# pids come in the order the processes registered (the first process
# normally registers first, but a registration that outlasts its 200 ms at
# CUDA initialisation completes later, in the background).
one_job() {
  gpushare-ctl ls >"$scratch/ls" &&
    jq -se --argjson a "$first" --argjson b "$second" --argjson used $((768 * mib)) '
      length == 1 and .[0].name == "treejob" and (.[0].pids | sort) == ([$a, $b] | sort) and
      .[0].pid == .[0].pids[0] and .[0].mem_used_bytes == $used and
      .[0].mem_limit_bytes == 1073741824' "$scratch/ls"
}
wait_for "ls to show one job with two pids and 768 MiB used" 10 one_job

# A coordinator restart: both processes register again, and are one job
# again (the tree file outlives the coordinator).
stop_coordinator KILL
start_coordinator
wait_for "the job to come back as one job after a coordinator restart" 10 one_job

expect_exit 0 gpushare-ctl set treejob --mem-limit 900MiB
jq -e --argjson b "$second" '.mem_limit_bytes == 943718400 and (.pids | index($b)) != null' \
  "$scratch/out" >/dev/null || fail "set did not answer with the whole job: $(cat "$scratch/out")"

# The second process: 256 MiB more would make 1 GiB (fits 1 GiB, not 900 MiB).
eval "exec $second_fd>&-"
unset "job_fd[second]"
wait_for "the second process to finish" 10 grep -q '^alloc bytes=134217728' "$scratch/second.out"
expect_grep "^alloc bytes=268435456 result=2$" "$scratch/second.out"
expect_grep "^alloc bytes=134217728 result=0$" "$scratch/second.out"
# It left; the job stays, with the first process alone.
wait_for "the job to keep only the first pid" 10 sh -c \
  "gpushare-ctl ls | jq -se --argjson a $first 'length == 1 and .[0].pids == [\$a]'"

# The first process: 450 MiB more would make 962 MiB (fits 1 GiB, not 900 MiB).
eval "exec $first_fd>&-"
unset "job_fd[first]"
{ wait "$run_pid"; } || fail "the job failed: $(cat "$scratch/run.err" "$scratch"/*.err)"
expect_grep "^alloc bytes=471859200 result=2$" "$scratch/first.out"
expect_grep "^alloc bytes=268435456 result=0$" "$scratch/first.out"
wait_for "the job to leave ls" 10 sh -c "gpushare-ctl ls | jq -se 'length == 0'"
expect_grep "pid $second joined job 1 'treejob' [(]2 processes[)]" "$scratch/coordinator.log"

# The tree file goes with the job (its janitor removes it).
tree=$(cat "$scratch/tree.path")
case $tree in /dev/shm/gpushare-tree-*) ;; *) fail "unexpected tree path '$tree'" ;; esac
wait_for "the tree file $tree to be removed" 10 sh -c "! test -e '$tree'"
echo "coord-process-tree: ok (one job, pids $first and $second, 768 MiB used of one 1 GiB limit)"
