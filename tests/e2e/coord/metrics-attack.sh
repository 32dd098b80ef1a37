#!/usr/bin/env bash
# Plays a client of the /metrics endpoint that tries to stall the
# coordinator: slowloris connections that send their request a byte at a
# time and never finish it, a request head of 1 MiB, binary garbage, and a
# flood of connections. Meanwhile `gpushare-ctl ls` must keep answering
# within a bound (a coordinator waiting on one of these clients would not
# answer until the attack ends, seconds later); the connection limit holds
# (a scrape beyond it is refused with 503), each abuse gets its answer
# (431, 400), the slow connections are closed at the endpoint's 5 s
# deadline, and the endpoint serves again afterwards.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"

start_coordinator --metrics-listen 127.0.0.1:0
address=$(jq -r .metrics_address "$scratch"/ready.*)
start_job prod GPUSHARE_JOB=train
port=${address##*:}

cat >"$scratch/attack.py" <<'PY'
import json, socket, sys, threading, time
port = int(sys.argv[1])
report = {}
lock = threading.Lock()

def connect():
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    return s

def answer(s):
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    return data.split(b"\r\n", 1)[0].decode("latin-1")

def slowloris(i, closed_after, connected):
    s = connect()
    start = time.monotonic()
    head = b"GET /metrics HTTP/1.1\r\nHost: x\r\n" + b"X-Slow: " + b"a" * 4000
    try:
        for n, byte in enumerate(head):
            s.send(bytes([byte]))
            if n == 0:
                connected[i].set()
            time.sleep(0.02)
            if time.monotonic() - start > 15:
                break
        s.settimeout(15)
        s.recv(1)  # the server closes it
    except OSError:
        pass
    closed_after[i] = time.monotonic() - start
    s.close()

# 1. Slowloris takes every slot (the limit is 16).
# Every slot is taken before the 17th connects: each slow connection is in
# the listen queue ahead of it (connected, its first byte sent), and the
# coordinator accepts in queue order. (Waiting a fixed half second instead
# let a loaded machine connect the 17th first, and it was served.)
closed_after = [None] * 16
connected = [threading.Event() for _ in range(16)]
threads = [threading.Thread(target=slowloris, args=(i, closed_after, connected))
           for i in range(16)]
for t in threads:
    t.start()
for event in connected:
    if not event.wait(20):
        sys.exit("a slow connection did not connect in 20 s")
print("attack-started", flush=True)
# 2. A scrape beyond the limit is refused, not queued.
s = connect(); s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"); report["beyond_limit"] = answer(s)
# 3. A flood of connections, all refused at once while the slots are taken.
flood = []
for _ in range(300):
    try:
        flood.append(connect())
    except OSError:
        break
report["flood_refused"] = sum(1 for f in flood if answer(f).startswith("HTTP/1.1 503"))
for t in threads:
    t.join()
report["slowloris_closed_after_s"] = [round(x, 2) for x in closed_after]
# 4. With the slots free again: an oversized head and garbage.
s = connect()
try:
    s.sendall(b"GET /metrics HTTP/1.1\r\nX: " + b"a" * (1 << 20))
except OSError:
    pass
report["oversized"] = answer(s)
s = connect(); s.sendall(b"\x00\xff\x16\x03\x01 garbage\r\n\r\n"); report["garbage"] = answer(s)
s = connect(); s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"); report["after"] = answer(s)
print(json.dumps(report), flush=True)
PY

python3 "$scratch/attack.py" "$port" >"$scratch/attack.out" 2>"$scratch/attack.err" &
attack_pid=$!
wait_for "the attack to start" 10 grep -q attack-started "$scratch/attack.out"

# ls during the attack: each answer within 1 s (a few ms expected; a
# stalled coordinator answers only when the attack ends, 5 s or more later).
worst=0 asked=0
while kill -0 "$attack_pid" 2>/dev/null; do
  start=$(now_ms)
  gpushare-ctl --timeout 10s ls >"$scratch/ls.out" 2>"$scratch/ls.err" ||
    fail "ls failed during the attack: $(cat "$scratch/ls.err")"
  elapsed=$(( $(now_ms) - start ))
  [ "$elapsed" -gt "$worst" ] && worst=$elapsed
  asked=$((asked + 1))
  jq -e 'select(.kind == "job") | .name == "train"' "$scratch/ls.out" >/dev/null ||
    fail "ls during the attack did not list the job"
done
wait "$attack_pid" || fail "the attacker failed: $(cat "$scratch/attack.err")"
echo "ls answered $asked times during the attack, the slowest in $worst ms"
[ "$asked" -ge 5 ] || fail "only $asked ls requests during the attack: the case was not exercised"
[ "$worst" -lt 1000 ] || fail "ls took $worst ms while the metrics endpoint was attacked"

report=$(tail -n1 "$scratch/attack.out")
echo "$report"
jq -e '.beyond_limit | startswith("HTTP/1.1 503")' <<<"$report" >/dev/null ||
  fail "a 17th connection was not refused: $report"
jq -e '.flood_refused >= 100' <<<"$report" >/dev/null || fail "the flood was not refused: $report"
# Closed at the 5 s deadline (checked every 100 ms), not when they gave up (15 s).
jq -e '.slowloris_closed_after_s | all(. >= 4.5 and . < 10)' <<<"$report" >/dev/null ||
  fail "slowloris connections were not closed at the deadline: $report"
jq -e '.oversized | startswith("HTTP/1.1 431")' <<<"$report" >/dev/null ||
  fail "an oversized request was not answered 431: $report"
jq -e '.garbage | startswith("HTTP/1.1 400")' <<<"$report" >/dev/null ||
  fail "garbage was not answered 400: $report"
jq -e '.after == "HTTP/1.1 200 OK"' <<<"$report" >/dev/null ||
  fail "the endpoint did not serve after the attack: $report"
kill -0 "$coordinator_pid" || fail "the coordinator died"
