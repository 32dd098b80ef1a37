#!/usr/bin/env bash
# serve --migration-policy on, on a simulated node of two GPUs: an
# opportunistic job trains on GPU 0; a production job starts there; the
# coordinator moves the opportunistic job to the idle GPU 1 (a line in its
# log says why), and production runs alone on GPU 0. Beside the same pair
# with the policy off, in two situations: production needs the GPU's time
# (the opportunistic job left beside it is held to its gaps by the compute
# loop) or its memory (the opportunistic job is spilled to the host and
# paused there). In both, production keeps its speed with the policy; the
# opportunistic job loses no iteration and its data verifies; and the moved
# job gains: both jobs see both GPUs, but the coordinator counts a process
# only on the GPUs it holds a context or memory on (registry.h, counts_on),
# so on GPU 1 the moved job runs alone. (Before that, the loop counted
# production on GPU 1 too, and the host pause paused the moved job there:
# it made 40 iterations against 17 left beside production in the time
# situation, 5 against 6 in the memory one; now 383 against 25, 381
# against 8.) The figures are printed, and as JSON lines (kind
# "migrate-policy").
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
export GPUSHARE_SIM_DEVICES=2 GPUSHARE_SIM_MEMORY=4GiB GPUSHARE_SIM_CTX_OVERHEAD=256MiB
export GPUSHARE_SIM_EVICT=off
w="$libexec/gpushare-workload"
GiB=$((1 << 30))

# run_pair POLICY PROD_MEM: the opportunistic job (1 GiB), then production
# (PROD_MEM) beside it for 3 s; sets prod_speed (production's iterations per
# second) and opp_done (the opportunistic job's iterations meanwhile).
run_pair() {
  local policy=$1 prod_mem=$2
  rm -f "$scratch/stop"
  : >"$scratch/coordinator.log"
  LD_LIBRARY_PATH="$libexec/sim" start_coordinator --migration-policy "$policy"
  gpushare-run --sim --opportunistic --name opp -- "$w" --mem 1GiB --verify 1GiB \
    --kernel-us 2000 --per-iteration --iterations 1000000 --stop-file "$scratch/stop" \
    >"$scratch/opp-$policy.out" 2>"$scratch/opp.err" &
  local opp=$!
  wait_for "the opportunistic job trains" 20 show_has opp ".iterations > 5 and .mem_used_bytes >= $GiB"
  local opp_before
  opp_before=$(gpushare-ctl show opp | jq -r .iterations)
  gpushare-run --sim --name prod -- "$w" --mem "$prod_mem" --kernel-us 2000 --duration 3 \
    >"$scratch/prod-$policy.out" 2>&1 || fail "production failed: $(cat "$scratch/prod-$policy.out")"
  local opp_after
  opp_after=$(gpushare-ctl show opp | jq -r .iterations)
  touch "$scratch/stop"
  wait "$opp" || fail "the opportunistic job failed: $(cat "$scratch/opp.err")"
  jq -se 'map(select(.kind == "workload-summary"))[0] as $s |
    ($s.verified_bytes == 1073741824) and
    ([.[] | select(.kind == "workload-iteration") | .iteration] == [range(0; $s.iterations)])' \
    "$scratch/opp-$policy.out" >/dev/null || fail "the opportunistic job lost steps or data ($policy)"
  stop_coordinator
  prod_speed=$(jq -r 'select(.kind == "workload-summary") | .iterations_per_s' "$scratch/prod-$policy.out")
  opp_done=$((opp_after - opp_before))
  if [ "$policy" = on ]; then
    expect_grep "migration policy: a production job uses GPU-[0-9a-f-]+; moving opportunistic job [0-9]+ 'opp' to idle GPU-" \
      "$scratch/coordinator.log"
    expect_grep "'opp' migrated from GPU-[0-9a-f-]+ to GPU-[0-9a-f-]+ in [0-9]+ ms" "$scratch/coordinator.log"
  else
    ! grep -q "migration policy" "$scratch/coordinator.log" || fail "the policy acted while off"
  fi
}

# Two situations: production needs the GPU's time (1 GiB: both fit, and
# the opportunistic job left beside it is held to its gaps), and its memory
# (3 GiB of the GPU's 4: the opportunistic job left beside it is spilled to
# the host and paused there).
for situation in time:1GiB memory:3GiB; do
  name=${situation%%:*} prod_mem=${situation#*:}
  run_pair off "$prod_mem"
  prod_off=$prod_speed opp_off=$opp_done
  run_pair on "$prod_mem"
  prod_on=$prod_speed opp_on=$opp_done
  echo "$name: production $prod_off it/s beside the opportunistic job (policy off), $prod_on it/s with it moved (on);" \
    "opportunistic $opp_off iterations in production's 3 s (off), $opp_on (on)"
  jq -nc --arg s "$name" --arg m "$prod_mem" --argjson po "$prod_off" --argjson pn "$prod_on" \
    --argjson oo "$opp_off" --argjson on "$opp_on" \
    '{kind: "migrate-policy", version: 1, situation: $s, gpus: 2, production_mem: $m, production_s: 3,
      production_iterations_per_s: {policy_off: $po, policy_on: $pn},
      opportunistic_iterations: {policy_off: $oo, policy_on: $on}}'
  awk -v off="$prod_off" -v on="$prod_on" 'BEGIN { exit !(on >= off * 0.9) }' ||
    fail "$name: production was slower with the policy: $prod_on against $prod_off it/s"
  # Moved to a GPU of its own, it is neither held to production's gaps nor
  # spilled.
  [ "$opp_on" -ge $((4 * opp_off + 20)) ] ||
    fail "$name: the moved job did not gain: $opp_on iterations with the policy against $opp_off without"
done
