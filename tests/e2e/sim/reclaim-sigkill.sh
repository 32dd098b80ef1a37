#!/usr/bin/env bash
# A process killed by SIGKILL (no exit handlers run) while holding 6 GiB of
# an 8 GiB simulated GPU, as plain, managed or VMM memory: its memory comes
# back to the next process that needs it, and NVML stops listing it; its
# unfinished kernels are dropped.
. "$(dirname "$0")/../common.inc"
use_sim GPUSHARE_SIM_MEMORY=8GiB GPUSHARE_SIM_CTX_OVERHEAD=0
client="$libexec/tests/gpushare-cuda-client"
# listed PID: whether the nvml step in $scratch/out lists PID.
listed() {
  jq -r --argjson pid "$1" 'select(.step=="nvml") | .processes | map(.pid) | index($pid) != null' \
    "$scratch/out"
}
wait_file() { for _ in $(seq 600); do [ -e "$1" ] && return 0; sleep 0.05; done; fail "timed out waiting for $1"; }

for kind in plain managed vmm; do
  rm -f "$scratch/ready"
  mkfifo "$scratch/pipe.$kind"
  # The victim holds its memory until its stdin closes, which never happens.
  "$client" init ctx alloc:$kind:6GiB ready:"$scratch/ready" hold <"$scratch/pipe.$kind" >/dev/null &
  victim=$!
  exec 3>"$scratch/pipe.$kind"
  wait_file "$scratch/ready"
  expect_exit 0 "$client" init ctx nvml
  [ "$(listed "$victim")" = true ] || fail "NVML does not list the live holder ($kind)"
  [ "$(jq -r 'select(.step=="nvml") | .nvml_used_bytes' "$scratch/out")" = $((6 << 30)) ] ||
    fail "NVML does not count the holder's $kind memory"

  kill -KILL "$victim"
  wait "$victim" 2>/dev/null || true
  exec 3>&-
  expect_exit 0 "$client" init ctx alloc:plain:4GiB nvml
  [ "$(listed "$victim")" = false ] || fail "NVML still lists the killed process ($kind)"
  [ "$(jq -r 'select(.step=="nvml") | .nvml_used_bytes' "$scratch/out")" = $((4 << 30)) ] ||
    fail "the killed process's $kind memory was not reclaimed"
done

# Its unfinished kernels go with it: under fifo, a kernel queued after a
# killed process's 20 s of kernels runs as soon as the next process to
# attach has reclaimed the slot, instead of after the 20 s.
export GPUSHARE_SIM_STATE="$scratch/fifo-state" GPUSHARE_SIM_SCHED=fifo
rm -f "$scratch/ready"
mkfifo "$scratch/pipe.kernels"
"$client" init ctx kernel:spin launch:100:200000 ready:"$scratch/ready" hold \
  <"$scratch/pipe.kernels" >/dev/null &
victim=$!
exec 3>"$scratch/pipe.kernels"
wait_file "$scratch/ready"
kill -KILL "$victim"
wait "$victim" 2>/dev/null || true
exec 3>&-
expect_exit 0 "$client" init ctx kernel:spin timed:1:10000
ms=$(jq -r 'select(.step=="timed") | .wall_ms | floor' "$scratch/out")
[ "$ms" -lt 5000 ] || fail "a 10 ms kernel waited $ms ms behind a killed process's kernels"
[ "$ms" -ge 10 ] || fail "a 10 ms kernel took $ms ms"
