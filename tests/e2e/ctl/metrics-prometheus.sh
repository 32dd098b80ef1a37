#!/usr/bin/env bash
# A real Prometheus (Debian's prometheus package; scripts/setup installs it)
# scrapes `gpushare-ctl serve --metrics-listen`, and a job's memory comes
# back through Prometheus' HTTP API with the job's labels: the text is what
# Prometheus accepts, not only what our own checks expect.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"

command -v prometheus >/dev/null || skip "needs prometheus (scripts/setup installs it)"

start_coordinator --metrics-listen 127.0.0.1:0
target=$(jq -r .metrics_address "$scratch"/ready.*)
start_job prod GPUSHARE_JOB=train GPUSHARE_MEM_LIMIT=8GiB -- --mem-total 16GiB
job_say prod alloc 3GiB >/dev/null

# A free port for Prometheus' own API (it cannot report one it picked).
web_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$scratch/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: gpushare
    static_configs:
      - targets: ['$target']
YML
prometheus --config.file="$scratch/prometheus.yml" --storage.tsdb.path="$scratch/tsdb" \
  --web.listen-address="127.0.0.1:$web_port" >"$scratch/prometheus.log" 2>&1 &
prometheus_pid=$!

# query PROMQL: prints Prometheus' JSON answer.
query() {
  python3 - "http://127.0.0.1:$web_port/api/v1/query" "$1" <<'PY'
import sys, urllib.parse, urllib.request
url = sys.argv[1] + "?" + urllib.parse.urlencode({"query": sys.argv[2]})
print(urllib.request.urlopen(url, timeout=5).read().decode())
PY
}
memory_is() {
  kill -0 "$prometheus_pid" || fail "prometheus exited: $(tail -n5 "$scratch/prometheus.log")"
  query "gpushare_job_memory_used_bytes{job_name=\"train\"}" >"$scratch/answer.json" 2>/dev/null &&
    jq -e --arg want "$1" '.status == "success" and (.data.result | length == 1) and
      .data.result[0].value[1] == $want' "$scratch/answer.json" >/dev/null
}
wait_for "Prometheus to scrape the job's memory" 60 memory_is 3221225472
jq -e --arg uid "$(id -u)" '.data.result[0].metric |
    .job == "gpushare" and .job_id == "1" and .uid == $uid and (.gpu_uuid | startswith("GPU-"))' \
  "$scratch/answer.json" >/dev/null || fail "the series lacks its labels: $(cat "$scratch/answer.json")"

# A change shows up at the next scrapes.
job_say prod alloc 1GiB >/dev/null
wait_for "Prometheus to see the job grow" 30 memory_is 4294967296
# Prometheus reports the target healthy (the scrape parsed without error).
query 'up{job="gpushare"}' | jq -e '.data.result[0].value[1] == "1"' >/dev/null ||
  fail "Prometheus reports the target down"
kill "$prometheus_pid"
wait "$prometheus_pid" 2>/dev/null || true
