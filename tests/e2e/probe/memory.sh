#!/usr/bin/env bash
# gpushare-probe memory on a workload of known shape: a 1 GiB working set,
# 512 MiB more while each iteration's kernels run (stream-ordered, so the
# simulator holds it until the iteration's synchronisation), 3 ms on the
# host and 4 x 2 ms of kernels. The profile must give a floor near 1 GiB and
# a ceiling near 1.5 GiB above the context's own memory, and the period
# within 10% of the iteration time the workload itself measured.
. "$(dirname "$0")/../common.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
workload="$libexec/gpushare-workload"

expect_exit 0 gpushare-probe memory --sim --plot "$scratch/curve.svg" -- "$workload" \
  --mem 1GiB --grow 512MiB --alloc async --kernel-us 2000 --host-us 3000 --iterations 150
# The job's own output goes to stderr; stdout has the probe's records only.
jq -e -s 'all(.[]; .kind == "memory-sample" or .kind == "memory-profile")' "$scratch/out" \
  >/dev/null || fail "stdout carries records other than the probe's"
truth=$(grep '"kind":"workload-summary"' "$scratch/err" | jq '.iteration_ms_mean')
[ -n "$truth" ] || fail "the workload's summary is not on stderr"

# Samples: in time order, each with its per-device bytes.
jq -e -s '[.[] | select(.kind == "memory-sample")] as $s | ($s | length) > 500
  and ([$s[].t_ms] == ([$s[].t_ms] | sort))
  and all($s[]; .mem_bytes == (.device_mem_bytes | add))' "$scratch/out" >/dev/null ||
  fail "the samples are not a time series with per-device bytes"

profile=$(jq -c 'select(.kind == "memory-profile")' "$scratch/out")
echo "$profile" | jq -e --argjson truth "$truth" '
  (1024 * 1024 * 1024) as $gib
  | .context_mem_bytes > 0
  and ((.floor_mem_bytes - .context_mem_bytes) / $gib - 1 | fabs) < 0.05
  and ((.ceiling_mem_bytes - .context_mem_bytes) / $gib - 1.5 | fabs) < 0.05
  and .peak_mem_bytes >= .ceiling_mem_bytes
  and .mem_bytes >= .peak_mem_bytes and .mem_bytes % 1048576 == 0
  and .period_source == "memory"
  and ((.period_ms / $truth - 1) | fabs) < 0.10
  and ((.iterations_per_s * .period_ms / 1000 - 1) | fabs) < 0.01
  and .util > 0 and .util <= 1
  and .exit_status == 0 and .touched_gpu and .id == "gpushare-workload"' >/dev/null ||
  fail "profile $profile does not match the workload (iteration $truth ms)"

# The plot: well-formed SVG with the curve, the floor and the ceiling.
if command -v xmllint >/dev/null; then
  xmllint --noout "$scratch/curve.svg" || fail "the plot is not well-formed XML"
else
  python3 -c 'import sys, xml.etree.ElementTree as e; e.parse(sys.argv[1])' "$scratch/curve.svg" ||
    fail "the plot is not well-formed XML"
fi
for id in memory-curve floor ceiling; do
  expect_grep "id=\"$id\"" "$scratch/curve.svg"
done
expect_grep '^<svg xmlns="http://www.w3.org/2000/svg"' "$scratch/curve.svg"

# --summary prints the profile alone; --duration stops a longer job.
expect_exit 0 gpushare-probe memory --sim --summary --duration 700ms --name train -- "$workload" \
  --mem 256MiB --kernel-us 1000 --duration 30
[ "$(wc -l <"$scratch/out")" -eq 1 ] || fail "--summary printed more than one record"
jq -e '.kind == "memory-profile" and .id == "train" and .stopped and .exit_status == 143
  and .elapsed_ms < 5000' "$scratch/out" >/dev/null || fail "--duration did not stop the job"

# Ctrl-C reaches the probe only (the job has its own process group): it
# stops the job, prints the profile of what it saw and exits 128+SIGINT.
gpushare-probe memory --sim -- "$workload" --mem 256MiB --kernel-us 1000 --duration 60 \
  >"$scratch/live" 2>/dev/null &
probe=$!
for _ in $(seq 400); do
  grep -q '"mem_bytes":[1-9]' "$scratch/live" && break
  sleep 0.05
done
grep -q '"mem_bytes":[1-9]' "$scratch/live" || fail "the probe never saw the job's memory"
job=$(pgrep -f -- "--mem 256MiB --kernel-us 1000 --duration 60" | grep -v "^$probe$" | head -1)
[ -n "$job" ] || fail "the job's process was not found"
kill -INT "$probe"
status=0
wait "$probe" || status=$?
[ "$status" -eq 130 ] || fail "an interrupted probe exited $status, not 130"
tail -n 1 "$scratch/live" | jq -e '.kind == "memory-profile" and .stopped and .touched_gpu' \
  >/dev/null || fail "an interrupted probe printed no profile"
if kill -0 "$job" 2>/dev/null; then fail "the job outlived the interrupted probe"; fi
