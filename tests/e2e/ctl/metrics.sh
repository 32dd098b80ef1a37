#!/usr/bin/env bash
# `gpushare-ctl metrics` prints the node in Prometheus' text format: HELP
# and TYPE for each family, gpushare_ names with units, a job's memory and
# limit per GPU with its id, name and uid as labels; /metrics serves the
# same text; a job without a limit has no limit sample; promtool (from
# Debian's prometheus package, where installed) accepts the text.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"

# http_get URL OUT: the body into OUT; prints the status code.
http_get() {
  python3 - "$1" "$2" <<'PY'
import sys, urllib.request, urllib.error
try:
    with urllib.request.urlopen(sys.argv[1], timeout=10) as r:
        open(sys.argv[2], "wb").write(r.read()); print(r.status)
except urllib.error.HTTPError as e:
    open(sys.argv[2], "wb").write(e.read()); print(e.code)
PY
}

start_coordinator --metrics-listen 127.0.0.1:0
address=$(jq -r .metrics_address "$scratch"/ready.*)
[[ "$address" =~ ^127\.0\.0\.1:[0-9]+$ ]] || fail "the ready record names no metrics address: $address"
start_job prod GPUSHARE_JOB=train GPUSHARE_MEM_LIMIT=8GiB -- --mem-total 16GiB
start_job opp GPUSHARE_JOB=eval GPUSHARE_QOS=opportunistic -- --mem-total 16GiB
job_say prod alloc 3GiB >/dev/null
job_say opp alloc 1GiB >/dev/null
wait_for "telemetry" 2 sh -c "gpushare-ctl node | jq -se '.[-1].mem_used_bytes == 4294967296'"

expect_exit 0 gpushare-ctl metrics
cp "$scratch/out" "$scratch/metrics.txt"
uuid='GPU-00010203-0405-0607-0809-0a0b0c0d0e0f'
labels="job_id=\"1\",job_name=\"train\",uid=\"$(id -u)\",gpu_uuid=\"$uuid\""
expect_grep "^# HELP gpushare_job_memory_used_bytes " "$scratch/metrics.txt"
expect_grep "^# TYPE gpushare_job_memory_used_bytes gauge$" "$scratch/metrics.txt"
expect_grep "^# TYPE gpushare_job_launches_total counter$" "$scratch/metrics.txt"
expect_grep "^gpushare_job_memory_used_bytes\{$labels\} 3221225472$" "$scratch/metrics.txt"
expect_grep "^gpushare_job_memory_limit_bytes\{$labels\} 8589934592$" "$scratch/metrics.txt"
expect_grep "^gpushare_job_info\{$labels,class=\"production\",pid=\"${job_pid[prod]}\"\} 1$" \
  "$scratch/metrics.txt"
expect_grep "^gpushare_job_state\{$labels,state=\"running\"\} 1$" "$scratch/metrics.txt"
expect_grep "^gpushare_device_memory_total_bytes\{gpu_uuid=\"$uuid\"\} 17179869184$" "$scratch/metrics.txt"
expect_grep "^gpushare_device_memory_used_bytes\{gpu_uuid=\"$uuid\"\} 4294967296$" "$scratch/metrics.txt"
expect_grep "^gpushare_device_jobs\{gpu_uuid=\"$uuid\",class=\"opportunistic\"\} 1$" "$scratch/metrics.txt"
expect_grep "^gpushare_jobs\{class=\"production\"\} 1$" "$scratch/metrics.txt"
# No limit: no sample (not a sentinel such as 2^64-1).
grep -q '^gpushare_job_memory_limit_bytes{job_id="2"' "$scratch/metrics.txt" &&
  fail "a job without a limit has a limit sample"
# Every sample's family was announced by HELP and TYPE before it.
awk '/^# TYPE / {seen[$3]=1; next} /^#/ {next}
     {name=$1; sub(/\{.*/, "", name); if (!seen[name]) {print "no TYPE before " name; bad=1}}
     END {exit bad}' "$scratch/metrics.txt" || fail "a sample came before its family's TYPE line"

# Every metric the Grafana dashboard queries exists.
grep -o 'gpushare_[a-z_]*' "$GPUSHARE_SOURCE_DIR/contrib/grafana/gpushare.json" | sort -u |
  while read -r name; do
    grep -q "^# TYPE $name " "$scratch/metrics.txt" || fail "the dashboard queries $name, which is not a metric"
  done
jq -e '.panels | length > 0' "$GPUSHARE_SOURCE_DIR/contrib/grafana/gpushare.json" >/dev/null

# The endpoint serves the same families (values such as speeds move).
status=$(http_get "http://$address/metrics" "$scratch/scraped.txt")
[ "$status" = 200 ] || fail "GET /metrics answered $status"
diff <(grep -v '^gpushare_job_\(launches\|iterations\|speed\|solo\|gpu_share\|slowdown\)' "$scratch/metrics.txt") \
  <(grep -v '^gpushare_job_\(launches\|iterations\|speed\|solo\|gpu_share\|slowdown\)' "$scratch/scraped.txt") ||
  fail "/metrics and gpushare-ctl metrics differ"
status=$(http_get "http://$address/" "$scratch/root.txt")
[ "$status" = 404 ] || fail "GET / answered $status, expected 404"

if command -v promtool >/dev/null; then
  promtool check metrics <"$scratch/metrics.txt" >"$scratch/promtool.out" 2>&1 ||
    { cat "$scratch/promtool.out"; fail "promtool rejects the metrics"; }
fi

# A bad address is a usage error, before anything is served.
expect_exit 2 gpushare-ctl serve --socket "$scratch/other.sock" --metrics-listen 9400
expect_grep "^gpushare-ctl: error: --metrics-listen: '9400': expected HOST:PORT$" "$scratch/err"
expect_exit 2 gpushare-ctl serve --socket "$scratch/other.sock" --metrics-listen :9400
expect_grep "no host \(give one: 127.0.0.1" "$scratch/err"
# A port in use is a failure at run time.
expect_exit 1 gpushare-ctl serve --socket "$scratch/other.sock" --metrics-listen "$address"
expect_grep "^gpushare-ctl: error: --metrics-listen: cannot listen on $address: Address already in use$" \
  "$scratch/err"

# Without a coordinator: status 1 and a clear error.
stop_coordinator
expect_exit 1 gpushare-ctl metrics
expect_grep "^gpushare-ctl: error: " "$scratch/err"
