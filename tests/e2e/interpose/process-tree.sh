#!/usr/bin/env bash
# A job is a process tree: what gpushare-run starts, and
# everything that starts, share one limit per device. A shell runs a first
# client that holds 768 MiB and then a second one: under --mem-limit 1GiB
# the second may take only the 256 MiB left (each process once had the full
# limit again: 1.5 GiB for the two). A process of the job that is killed
# while holding memory gives its charge back to the tree at the next
# refusal. Both cases are run without the interposer too, as a control.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"

export GPUSHARE_SIM_MEMORY=16GiB
run=(gpushare-run --sim --no-coordinator --mem-limit 1GiB --)

# The script the job runs: $1 the client, $2 "kill" to SIGKILL the first
# process before the second starts. The first holds until its input ends.
cat >"$scratch/tree.sh" <<'SCRIPT'
set -eu
client=$1
mkfifo hold.fifo
"$client" alloc 768MiB hold <hold.fifo >first.out &
first=$!
exec 3>hold.fifo
until grep -q '^hold ready' first.out; do
  kill -0 "$first" 2>/dev/null || { echo "the first client exited"; exit 1; }
  sleep 0.01
done
if [ "$2" = kill ]; then
  kill -KILL "$first"
  wait "$first" || true
  "$client" alloc 768MiB
else
  "$client" alloc 768MiB alloc 256MiB
  exec 3>&-
  wait "$first"
fi
SCRIPT

cd "$scratch"
GPUSHARE_DISABLE=1 "${run[@]}" bash tree.sh "$gs_client" share >control.out 2>&1 ||
  fail "control: $(cat control.out)"
expect_grep "^alloc bytes=805306368 result=0$" control.out  # 1.5 GiB for a 1 GiB job
rm -f hold.fifo first.out

"${run[@]}" bash tree.sh "$gs_client" share >tree.out 2>&1 || fail "tree: $(cat tree.out)"
grep -q "^alloc bytes=805306368 result=2$" tree.out || fail "the second process got 768 MiB more"
expect_grep "^alloc bytes=268435456 result=0$" tree.out
rm -f hold.fifo first.out

"${run[@]}" bash tree.sh "$gs_client" kill >killed.out 2>&1 || fail "kill: $(cat killed.out)"
expect_grep "^alloc bytes=805306368 result=0$" killed.out
echo "interpose-process-tree: ok (two processes of a 1 GiB job: 1.5 GiB without the tree, 1 GiB with it)"
