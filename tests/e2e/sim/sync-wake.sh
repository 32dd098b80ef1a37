#!/usr/bin/env bash
# A synchronising process sleeps until the scheduler model says its work is
# done, and looks again when another process's later launch pushed it back:
# job a queues a 1 s kernel and synchronises; job b then queues its own 1 s
# kernel. Time-sliced, a's kernel ends only after about 2 s (it shares the
# device), so a's synchronisation returns after well over the 1 s it was
# first projected to take, and not much later than b's; waiting all that
# time costs a almost no CPU time (it sleeps, never spins).
. "$(dirname "$0")/../common.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
[ -x /usr/bin/time ] || skip "/usr/bin/time is not installed"
export LD_LIBRARY_PATH="$libexec/sim"
client="$libexec/tests/gpushare-cuda-client"

/usr/bin/time -f '%U %S' -o "$scratch/a.cpu" \
  "$client" init ctx kernel:spin launch:1:1000000 ready:"$scratch/a.queued" sync >"$scratch/a.out" &
a=$!
"$client" init ctx kernel:spin wait:"$scratch/a.queued" launch:1:1000000 sync >"$scratch/b.out" ||
  fail "job b failed"
wait "$a" || fail "job a failed"
a_ms=$(jq -r 'select(.step=="sync") | .wall_ms | floor' "$scratch/a.out")
b_ms=$(jq -r 'select(.step=="sync") | .wall_ms | floor' "$scratch/b.out")
read -r user system <"$scratch/a.cpu"
echo "a synchronised after $a_ms ms, b after $b_ms ms; a used ${user}s user ${system}s system"
# b's launch came at most 700 ms after a's (else a ran alone for most of it).
[ "$a_ms" -ge 1300 ] || fail "a's sync returned after $a_ms ms: before its shared kernel could end"
[ "$a_ms" -le 4000 ] || fail "a's sync returned after $a_ms ms: it overslept"
[ "$b_ms" -ge 1000 ] || fail "b's 1 s kernel was done after $b_ms ms"
awk -v u="$user" -v s="$system" 'BEGIN { exit !(u + s < 0.5) }' ||
  fail "a used ${user}s + ${system}s of CPU while waiting: it spun"
