#!/usr/bin/env bash
# What a person at a terminal sees from `gpushare-ctl ls`: with a
# production and an opportunistic job on the simulated GPU, a table that
# fits a 100-column terminal (names, classes, the GPU, memory, production's
# speed against solo, the opportunistic job's share of the free GPU time,
# the hold reason, the state); every column with --format wide (and its old
# name, table); JSON Lines as before when asked, or when stdout is a pipe
# (`ls | cat`), so scripts see no change. The coordinator reads NVML (the
# simulator's), so the records carry the free GPU time and the share.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"
. "$e2e_dir/tty.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
workload="$libexec/gpushare-workload"
common=(--mem 16MiB --verify 1MiB)

LD_LIBRARY_PATH="$libexec/sim" start_coordinator
# Production busy about half the time (20 ms kernels, 20 ms on the host);
# the opportunistic job works in its gaps.
gpushare-run --sim --name train-production -- "$workload" "${common[@]}" \
  --kernels-per-iter 1 --kernel-us 20000 --host-us 20000 --duration 60 \
  >"$scratch/prod.out" 2>"$scratch/prod.err" &
gpushare-run --sim --opportunistic --name sweep-opportunistic -- "$workload" "${common[@]}" \
  --kernels-per-iter 8 --kernel-us 1000 --duration 60 >"$scratch/opp.out" 2>"$scratch/opp.err" &

# Both running, measured, and the opportunistic job's share known.
both_measured() {
  gpushare-ctl ls | jq -se '
    length == 2 and
    ([.[] | select(.name == "train-production") | .speed_per_s != null and
       .solo_speed_per_s != null and .free_gpu_ns_last_window != null and
       .free_share_ppm == null] == [true]) and
    ([.[] | select(.name == "sweep-opportunistic") | .free_share_ppm != null and
       .free_share_ppm <= 1000000 and .free_gpu_ns_last_window > 0] == [true])' >/dev/null
}
wait_for "both jobs measured, the free share known" 30 both_measured

start_terminal 100 50  # tall enough for a whole job record (JSON) on screen
run_in_terminal "gpushare-ctl ls"
screen >"$scratch/ls"
expect_grep '^ID +NAME +CLASS +GPU +MEMORY +SPEED +SOLO/FREE +HOLD +STATE$' "$scratch/ls"
expect_grep '^[0-9]+ +train-production +prod +[0-9a-f]{8} +[0-9.]+[KMG]?i?B/- +[0-9.]+ (it|launch)/s +[0-9]+% solo +[a-z-]+ +running$' \
  "$scratch/ls"
expect_grep '^[0-9]+ +sweep-opportunistic +opp +[0-9a-f]{8} +.* +([0-9]+% free|none free) +[a-z-]+ +running$' \
  "$scratch/ls"
awk 'length($0) > 100 { exit 1 }' "$scratch/ls" ||
  fail "a line of ls is wider than 100 columns: $(awk 'length($0) > 100' "$scratch/ls")"

# Every column, for people who ask: wider than the terminal.
run_in_terminal "gpushare-ctl ls --format wide"
screen >"$scratch/wide"
expect_grep '^ID +NAME +PID +UID +QOS +DEVICE +MEM-USED' "$scratch/wide"
awk 'length($0) > 100 { found = 1 } END { exit !found }' "$scratch/wide" ||
  fail "ls --format wide fits 100 columns: it lost columns"
run_in_terminal "gpushare-ctl ls --format table"
screen >"$scratch/table"
expect_grep '^ID +NAME +PID +UID +QOS +DEVICE +MEM-USED' "$scratch/table"

# JSON when asked, on the terminal too.
run_in_terminal "gpushare-ctl show sweep-opportunistic --format json"
screen >"$scratch/json"
expect_grep '^\{"kind":"job","version":1,.*"name":"sweep-opportunistic"' "$scratch/json"

# Piped: JSON Lines exactly as a script reads them.
run_in_terminal "gpushare-ctl ls | cat"
screen | grep '^{' >"$scratch/piped" || true
[ "$(wc -l <"$scratch/piped")" -eq 2 ] || fail "ls | cat: expected 2 JSON lines: $(screen)"
jq -se 'all(.[]; .kind == "job" and .version == 1)' "$scratch/piped" >/dev/null ||
  fail "ls | cat is not the job records: $(cat "$scratch/piped")"
gpushare-ctl ls >"$scratch/redirected"
jq -se 'length == 2 and all(.[]; .kind == "job")' "$scratch/redirected" >/dev/null ||
  fail "ls to a file is not JSON Lines: $(cat "$scratch/redirected")"

# The metrics carry the same figures.
gpushare-ctl metrics >"$scratch/metrics"
expect_grep '^gpushare_job_free_share_ratio\{.*job_name="sweep-opportunistic".*\} [0-9.e+-]+$' \
  "$scratch/metrics"
expect_grep '^gpushare_job_free_gpu_seconds_last_window\{.*job_name="train-production".*\} [0-9.e+-]+$' \
  "$scratch/metrics"
if grep -q 'gpushare_job_free_share_ratio{.*job_name="train-production"' "$scratch/metrics"; then
  fail "a production job has a share of the free GPU time"
fi

echo "ctl-ls-tty: ok"
