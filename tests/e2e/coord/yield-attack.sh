#!/usr/bin/env bash
# The yield signal against hostile jobs (control_block.h, layout 4), over
# the raw protocol (gpushare-coord-yield-attack):
# - an opportunistic job given a production job's yield page can read it
#   and cannot write it: a writable mmap, mprotect, pwrite, a writable
#   reopen through /proc and ftruncate all fail;
# - a production job that does not seal its page never has it passed on;
# - a production job that holds its busy mark without a break is followed
#   for about a second, then no more (the opportunistic job's yield_mask
#   goes back to 0: a bounded starvation), while the coordinator keeps
#   answering and other production jobs are never given a mask.
# Bounds are generous (a stuck mark is dropped after 1 s; the test allows
# 6 s): they catch a coordinator that never drops it.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"
attacker="$libexec/tests/gpushare-coord-yield-attack"
[ -x "$attacker" ] || fail "missing $attacker"

start_coordinator
a() { "$attacker" --socket "$GPUSHARE_SOCKET" "$@"; }
a --role opportunistic --name opp --seconds 20 >"$scratch/opp" 2>"$scratch/opp.err" &
wait_for "the opportunistic attacker to register" 5 grep -q attacker-registered "$scratch/opp"
a --role production --name unsealed --no-seal --seconds 20 >"$scratch/unsealed" 2>&1 &
wait_for "the unsealed producer to register" 5 grep -q attacker-registered "$scratch/unsealed"
# Long enough for the loop (25 ms ticks) to pass on a page it should not.
wait_for "the unsealed producer to be listed" 5 sh -c \
  "gpushare-ctl ls | jq -se 'any(.[]; .name == \"unsealed\")'"
a --role production --name holder --hold --seconds 20 >"$scratch/holder" 2>&1 &
wait_for "a yield page to reach the opportunistic job" 5 grep -q yield-attack "$scratch/opp"

# 1. Exactly one page came (the sealed one), readable and not writable.
[ "$(grep -c yield-attack "$scratch/opp")" = 1 ] ||
  fail "the unsealed page was passed on: $(grep yield-attack "$scratch/opp")"
jq -se 'map(select(.kind == "yield-attack")) | all(.readable == true and .mmap_write != 0
       and .mprotect_write != 0 and .pwrite != 0 and .reopen_write != 0 and .ftruncate != 0)' \
  "$scratch/opp" >/dev/null || fail "the page could be written: $(grep yield-attack "$scratch/opp")"

# 2. The holder's slot is followed, then dropped as stuck.
followed() { jq -se 'any(.[]; .kind == "yield-mask" and .mask != 0)' "$scratch/opp"; }
dropped() {
  jq -se '[.[] | select(.kind == "yield-mask")] | (map(.mask != 0) | index(true)) as $on
          | $on != null and (.[$on:] | any(.mask == 0))' "$scratch/opp"
}
wait_for "the holder's mark to be followed" 5 followed
wait_for "the stuck mark to be dropped" 6 dropped

# 3. The coordinator answers, and no production job was given a mask.
expect_exit 0 gpushare-ctl ls
[ "$(jq -s 'map(select(.kind == "job")) | length' "$scratch/out")" = 3 ] ||
  fail "gpushare-ctl ls: $(cat "$scratch/out")"
for p in unsealed holder; do
  jq -se 'all(.[]; .kind != "yield-mask" or .mask == 0)' "$scratch/$p" >/dev/null ||
    fail "production job $p was given a yield mask: $(cat "$scratch/$p")"
done
echo "coord-yield-attack: ok"
