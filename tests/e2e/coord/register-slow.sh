#!/usr/bin/env bash
# A job whose coordinator is known to be there (gpushare-run found it:
# GPUSHARE_LAUNCHED_FOR) is coordinated from its first launch however slow
# the coordinator is to answer, and the coordinator gives out no id to a
# request whose job gave up: ids stay consecutive.
#
# The slow coordinator is a stopped one (SIGSTOP, then SIGCONT). The
# faults this catches: an opportunistic job that gives up after 200 ms and
# starts unthrottled beside production (it then says "no coordinator
# answers" on stderr, right after CUDA initialisation), and an id spent on
# a request nobody waits for (the killed job's, or the abandoned first
# attempt's), which leaves a gap in the ids.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"
export GPUSHARE_SIM_MEMORY=1GiB GPUSHARE_SIM_CTX_OVERHEAD=0
c="$libexec/tests/gpushare-cuda-client"
s=$scratch
id_of() { gpushare-ctl show "$1" | jq -e -r .id; }

start_coordinator
gpushare-run --sim --name first -- "$c" init ctx ready:"$s/first" wait:"$s/release" \
  >"$s/first.out" 2>"$s/first.err" &
first=$!
wait_for "the first job" 10 test -e "$s/first"
first_id=$(id_of first) || fail "the first job is not registered: $(gpushare-ctl ls)"

kill -STOP "$coordinator_pid"
# A job that gives up: killed while its request waits in the stopped
# coordinator's socket.
gpushare-run --sim --name quitter -- "$c" init ctx >"$s/quitter.out" 2>"$s/quitter.err" &
quitter=$!
# The opportunistic job, started while the coordinator does not answer.
gpushare-run --sim --opportunistic --name opp -- "$c" init ctx launch:1:100 ready:"$s/opp" \
  wait:"$s/release" >"$s/opp.out" 2>"$s/opp.err" &
opp=$!
wait_for "the quitter to wait for the coordinator" 10 grep -q "has not answered in 200 ms" "$s/quitter.err"
kill -KILL "$quitter"
wait "$quitter" 2>/dev/null || true
wait_for "the opportunistic job to wait for the coordinator" 10 \
  grep -q "has not answered in 200 ms; waiting up to 10 s" "$s/opp.err"
kill -CONT "$coordinator_pid"

wait_for "the opportunistic job's first launch" 15 test -e "$s/opp"
if grep -q "no coordinator answers\|registered late" "$s/opp.err"; then
  fail "the opportunistic job started uncoordinated: $(cat "$s/opp.err")"
fi
opp_id=$(id_of opp) || fail "the opportunistic job is not registered: $(gpushare-ctl ls)"
[ "$opp_id" -eq $((first_id + 1)) ] ||
  fail "the opportunistic job is job $opp_id after job $first_id: an id was spent on nothing ($(cat "$s/coordinator.log"))"

gpushare-run --sim --name last -- "$c" init ctx ready:"$s/last" wait:"$s/release" \
  >"$s/last.out" 2>"$s/last.err" &
last=$!
wait_for "the last job" 10 test -e "$s/last"
last_id=$(id_of last) || fail "the last job is not registered"
[ "$last_id" -eq $((opp_id + 1)) ] ||
  fail "the last job is job $last_id after job $opp_id: an id was spent on nothing ($(cat "$s/coordinator.log"))"
expect_grep "gave up before its registration was answered; no id given" "$s/coordinator.log"

touch "$s/release"
for pid in "$first" "$opp" "$last"; do wait "$pid" || fail "a job failed: $(cat "$s"/*.err)"; done
