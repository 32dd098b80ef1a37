#!/usr/bin/env bash
# A suspend or resume that takes seconds says how far it is on a terminal's
# stderr (tmux): "suspending job N: ... moved, RATE/s" rewritten in place
# while the job's 512 MiB moves (the simulated link held to 128 MiB/s, so
# about 4 s), then "suspended job N: 512MiB of 512MiB moved"; and the same
# commands with stderr not a terminal write nothing to it.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"
. "$e2e_dir/mem.inc"
. "$e2e_dir/tty.inc"
export GPUSHARE_SIM_MEMORY=1GiB GPUSHARE_SIM_EVICT=off GPUSHARE_SIM_CTX_OVERHEAD=0
export GPUSHARE_SIM_MIGRATE_BANDWIDTH=128MiB

# The interposer's path, whose bytes move over seconds (through the
# driver's checkpoint a suspend of the simulated GPU takes milliseconds).
start_coordinator --checkpoint off
gpushare-run --sim --opportunistic --name opp -- "$c" init ctx alloc:plain:512MiB fill:5 \
  ready:"$s/full" wait:"$s/done" check:5 >"$s/opp.out" 2>"$s/opp.err" &
opp=$!
wait_for "the opportunistic job's 512 MiB" 10 test -e "$s/full"
wait_for "the job registered" 5 gpushare-ctl show opp
id=$(gpushare-ctl show opp | jq .id)

start_terminal 100 10
tmx send-keys -t t -l 'gpushare-ctl suspend opp >/dev/null; echo "end-""of-suspend $?"'
tmx send-keys -t t Enter
wait_screen "the suspend's progress" 10 \
  "^gpushare-ctl: suspending job $id: [0-9.]+[KMG]?i?B of 512MiB moved, [0-9.]+[KMG]?i?B/s(, a batch of [0-9.]+[KMG]?i?B)?, [0-9]+s\$"
wait_screen "the suspend to finish" 30 '^end-of-suspend 0$'
expect_grep "^gpushare-ctl: suspended job $id: 512MiB of 512MiB moved, [0-9.]+[KMG]?i?B/s, [0-9]+s\$" \
  "$scratch/screen"

run_in_terminal "gpushare-ctl resume opp >/dev/null"
expect_grep '^end-of-run-[0-9]+ 0$' "$scratch/screen"
expect_grep "^gpushare-ctl: resumed job $id: 512MiB of 512MiB moved, [0-9.]+[KMG]?i?B/s, [0-9]+s\$" \
  "$scratch/screen"

# stderr not a terminal: nothing but errors there, and the records as before.
gpushare-ctl suspend opp >"$s/suspend.json" 2>"$s/suspend.err" || fail "$(cat "$s/suspend.err")"
[ ! -s "$s/suspend.err" ] || fail "a suspend wrote to a stderr that is no terminal: $(cat "$s/suspend.err")"
jq -e '.state == "suspended"' "$s/suspend.json" >/dev/null || fail "$(cat "$s/suspend.json")"
gpushare-ctl resume opp >"$s/resume.json" 2>"$s/resume.err" || fail "$(cat "$s/resume.err")"
[ ! -s "$s/resume.err" ] || fail "a resume wrote to a stderr that is no terminal: $(cat "$s/resume.err")"

touch "$s/done"
wait "$opp" || fail "the job failed: $(cat "$s/opp.out" "$s/opp.err")"
[ "$(field "$s/opp.out" check result)" = CUDA_SUCCESS ] || fail "its data: $(cat "$s/opp.out")"
echo "ctl-suspend-tty: ok"
