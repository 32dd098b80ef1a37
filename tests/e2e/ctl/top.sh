#!/usr/bin/env bash
# `gpushare-ctl top` in a real terminal (tmux): it shows the GPU with both
# jobs, their classes, production's speed against solo, the opportunistic
# job's share and hold reason; it redraws when a job changes (a pause) and
# when the terminal is resized (SIGWINCH, long before its next refresh);
# `q`, ^C and SIGTERM end it with the terminal as it was (canonical mode,
# echo). With stdout not a terminal it refuses and points at watch and ls.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"
. "$e2e_dir/tty.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
workload="$libexec/gpushare-workload"
common=(--mem 16MiB --verify 1MiB)

LD_LIBRARY_PATH="$libexec/sim" start_coordinator

# Not a terminal: a clear refusal, nothing on stdout.
expect_exit 2 gpushare-ctl top
[ ! -s "$scratch/out" ] || fail "top wrote to a stdout that is not a terminal"
expect_grep "^gpushare-ctl: error: top draws on a terminal, and stdout is not one; for records use 'gpushare-ctl watch' .* or 'gpushare-ctl ls'$" \
  "$scratch/err"

gpushare-run --sim --name train-production -- "$workload" "${common[@]}" \
  --kernels-per-iter 1 --kernel-us 20000 --host-us 20000 --duration 60 \
  >"$scratch/prod.out" 2>"$scratch/prod.err" &
gpushare-run --sim --opportunistic --name sweep-opportunistic -- "$workload" "${common[@]}" \
  --kernels-per-iter 8 --kernel-us 1000 --duration 60 >"$scratch/opp.out" 2>"$scratch/opp.err" &
both_running() {
  gpushare-ctl ls | jq -se 'length == 2 and all(.[]; .state == "running" and .device != null)' \
    >/dev/null
}
wait_for "both jobs to run on the GPU" 30 both_running

# termios as the shell's commands see it.
terminal_restored() {
  run_in_terminal "stty -a | tr ' ;' '\\n\\n' | grep -x -e icanon -e echo | tr '\\n' ' '; echo"
  screen_matches '^icanon echo$' || { echo "--- screen:"; screen; fail "$1: the terminal was left in raw mode"; }
}

start_terminal 100 30
tmx send-keys -t t -l 'gpushare-ctl top --interval 300ms; echo "end-""of-top $?"'
tmx send-keys -t t Enter
wait_screen "top's header" 10 '^gpushare-ctl top +[0-9]{2}:[0-9]{2}:[0-9]{2} +every 300ms +2 jobs on 1 GPU +q quits$'
wait_screen "the GPU line" 10 '^GPU [0-9a-f]{8} +memory [0-9.]+[KMG]?i?B of [0-9.]+[KMG]?i?B'
wait_screen "the production job, its class and its speed against solo" 10 \
  '^  [0-9]+ +train-production +prod +[0-9.]+ it/s +[0-9]+% solo '
wait_screen "the opportunistic job, its class, share and hold reason" 10 \
  '^  [0-9]+ +sweep-opportunistic +opp +[0-9.]+ (it|launch)/s +([0-9]+% free|none free) +(waiting-for-gap|learning|running|idle|launch-budget|compute-cap) '
wait_screen "the node's totals" 10 '^node: 2 jobs \(1 production, 1 opportunistic\), 0 paused; '
screen | awk 'length($0) > 100 { exit 1 }' || fail "top drew a line wider than 100 columns"

# A change: the next refresh shows it.
expect_exit 0 gpushare-ctl pause sweep-opportunistic
wait_screen "the pause and its reason" 10 \
  '^  [0-9]+ +sweep-opportunistic +opp .* paused-operator .* paused$'
wait_screen "the node's paused count" 10 '^node: 2 jobs .*, 1 paused; '

# q quits, at once, with status 0 and the terminal restored.
press q
wait_screen "top to quit on q" 5 '^end-of-top 0$'
terminal_restored "q"

# A resize redraws at once, not at the next refresh a minute away.
tmx send-keys -t t -l 'clear; gpushare-ctl top --interval 60s; echo "end-""of-top $?"'
tmx send-keys -t t Enter
wait_screen "top's first frame" 10 '^gpushare-ctl top .* every 60s '
tmx resize-window -t t -x 60 -y 30
# Cut to 60 columns: the header now ends in the '~' that says so.
wait_screen "a redraw at 60 columns" 10 '^gpushare-ctl top +[0-9:]+ +every 60s +2 jobs on 1 GPU .*~$'
screen | awk 'length($0) > 60 { exit 1 }' || fail "top drew past 60 columns after the resize"

# ^C: a normal end (status 0), the terminal restored.
press C-c
wait_screen "top to end on ^C" 5 '^end-of-top 0$'
terminal_restored "^C"

# SIGTERM likewise.
tmx send-keys -t t -l 'clear; gpushare-ctl top --interval 59s; echo "end-""of-top $?"'
tmx send-keys -t t Enter
wait_screen "top's first frame" 10 '^gpushare-ctl top .* every 59s '
shell_pid=$(tmx display-message -p -t t '#{pane_pid}')
top_pid=$(pgrep -P "$shell_pid" -x gpushare-ctl) || fail "no top under the terminal's shell"
kill -TERM "$top_pid"
wait_screen "top to end on SIGTERM" 5 '^end-of-top 0$'
terminal_restored "SIGTERM"

echo "ctl-top: ok"
