#!/usr/bin/env bash
# gpushare-run --compute-trace: an opportunistic job beside production
# writes its admission decisions as JSON Lines, one file per process ("%p"),
# mode 0600, with the documented records (docs/compute-trace.md); a path
# that exists, file or link, is never written through (the trace is off,
# with a warning).
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
workload="$libexec/gpushare-workload"
common=(--mem 16MiB --verify 1MiB)

start_coordinator
gpushare-run --sim --name prod -- "$workload" "${common[@]}" \
  --kernels-per-iter 10 --kernel-us 1400 --host-us 15000 --duration 10 \
  >"$scratch/prod.out" 2>"$scratch/prod.err" &
prod_pid=$!
listed_prod() { gpushare-ctl ls | jq -se 'any(.[]; .name == "prod" and .launches > 0)' >/dev/null; }
wait_for "production to launch" 10 listed_prod

mkdir "$scratch/traces"
# A relative path, from the current directory.
(cd "$scratch/traces" && expect_exit 0 gpushare-run --sim --opportunistic --name opp \
  --compute-trace 'opp-%p.jsonl' -- "$workload" "${common[@]}" \
  --kernels-per-iter 20 --kernel-us 1400 --duration 4)
shopt -s nullglob
files=("$scratch"/traces/opp-*.jsonl)
[ "${#files[@]}" -eq 1 ] || fail "expected one trace file, got: ${files[*]:-none}"
trace=${files[0]}
[ "$(stat -c %a "$trace")" = 600 ] || fail "the trace's mode is $(stat -c %a "$trace"), not 600"
jq -e . "$trace" >/dev/null || fail "the trace is not JSON Lines"
jq -se '.[0].kind == "compute-trace-start" and .[0].qos == "opportunistic"
        and (.[0].pid | type) == "number"' "$trace" >/dev/null ||
  fail "the trace does not open with its start record: $(head -1 "$trace")"
# Every record says what it is, in which version, when.
jq -se 'all(.[]; (.kind | type) == "string" and .version == 1 and (.t_ns | type) == "number")' \
  "$trace" >/dev/null || fail "a record lacks kind, version or t_ns"
# Beside a production job the job waited for its gaps, and learned its cost
# from marker events.
jq -se 'any(.[]; .kind == "compute-wait" and (.reason | test("^production-"))
        and has("grant_ns") and has("launch_ns") and has("prod_busy") and .wait_ns >= 0)' \
  "$trace" >/dev/null || fail "no wait for production in the trace"
jq -se 'any(.[]; .kind == "compute-marker" and .launches > 0 and .gpu_ns > 0)' \
  "$trace" >/dev/null || fail "no timed marker in the trace"
jq -se 'any(.[]; .kind == "compute-burst" and (.cause | IN("first", "host-gap")))' \
  "$trace" >/dev/null || fail "no burst start in the trace"

# A path that exists is not written: neither a file nor what a link names.
echo "not a trace" >"$scratch/traces/taken.jsonl"
echo "precious" >"$scratch/precious"
ln -s "$scratch/precious" "$scratch/traces/link.jsonl"
for name in taken link; do
  expect_exit 0 gpushare-run --sim --opportunistic --name "opp-$name" \
    --compute-trace "$scratch/traces/$name.jsonl" -- "$workload" "${common[@]}" \
    --kernels-per-iter 20 --kernel-us 1400 --duration 1
  expect_grep "GPUSHARE_COMPUTE_TRACE: cannot create '$scratch/traces/$name.jsonl'" "$scratch/err"
done
[ "$(cat "$scratch/traces/taken.jsonl")" = "not a trace" ] || fail "an existing file was written"
[ "$(cat "$scratch/precious")" = "precious" ] || fail "a link was followed"

kill "$prod_pid" 2>/dev/null || true
wait "$prod_pid" 2>/dev/null || true
echo "run-compute-trace: ok"
