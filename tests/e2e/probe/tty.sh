#!/usr/bin/env bash
# gpushare-probe in a real terminal (tmux): `device` prints a table, and
# JSON Lines when piped; `memory --summary --caps` says how far it is on
# stderr while it runs, in whole lines (the job's own output shares that
# stderr): the profiling run from 2 s on (seconds, memory now and peak),
# then each cap (run N of M, the cap, an estimate); and it prints its
# profile as text instead of a JSON record.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"
. "$e2e_dir/tty.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
workload="$libexec/gpushare-workload"

start_terminal 120 40
run_in_terminal "gpushare-probe device --sim"
expect_grep '^INDEX +NAME +UUID +MEM-TOTAL +MEM-USED +SMS +CC +SIMULATED$' "$scratch/screen"
expect_grep '^0 +gpushare simulated GPU +GPU-[0-9a-f-]+ +16GiB +[0-9.]+[KMG]?i?B +[0-9]+ +[0-9.]+ +yes$' \
  "$scratch/screen"
run_in_terminal "gpushare-probe device --sim | cat"
expect_grep '^\{"kind":"device","version":1,"index":0,' "$scratch/screen"

# About 3 s per run or more (5 ms per iteration at the least): past the 2 s
# after which the profiling run says how far it is.
tmx send-keys -t t -l "clear; gpushare-probe memory --sim --summary --caps 100% -- $workload \
--mem 256MiB --kernel-us 2000 --host-us 3000 --iterations 600; echo \"end-\"\"of-probe \$?\""
tmx send-keys -t t Enter
wait_screen "the profiling run's progress" 20 \
  '^gpushare-probe: memory: [0-9]+s, [0-9.]+[KMG]?i?B now, peak [0-9.]+[KMG]?i?B$'
wait_screen "the caps' progress" 30 \
  '^gpushare-probe: memory caps: run 1 of 1 \(cap 100%\), about [0-9]+s left$'
wait_screen "the probe to finish" 30 '^end-of-probe 0$'
expect_grep '^memory profile of gpushare-workload:$' "$scratch/screen"
expect_grep '^mem_bytes +[0-9.]+[KMG]iB$' "$scratch/screen"
if grep -q '"kind":"memory-profile"' "$scratch/screen"; then
  fail "the profile went to the terminal as JSON"
fi

echo "probe-tty: ok"
