#!/usr/bin/env bash
# 100 cycles of production growth and release against two
# opportunistic gpushare-workload jobs, on a 1 GiB simulated GPU (eviction
# off, so only a spill makes room; a fast link, 200 GB/s, so the test stays
# short). Each opportunistic job holds one 256 MiB working set and checks
# its data after every iteration (--verify-every 1). The production job
# holds 128 MiB and, each cycle, grows by 2 x 384 MiB (896 MiB in all: both
# opportunistic jobs must spill) and frees the growth again. Each cycle
# waits for both spills to show in ls and for each opportunistic job to
# finish an iteration (a data check) while spilled, then for both
# restores and a data check after them. Prints its counts; fails on any
# mismatch, failed production allocation, or a cycle without its spills
# and restores.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"
. "$e2e_dir/mem.inc"
export GPUSHARE_SIM_MEMORY=1GiB GPUSHARE_SIM_EVICT=off GPUSHARE_SIM_CTX_OVERHEAD=0
export GPUSHARE_SIM_PCIE_GBPS=200 GPUSHARE_SIM_LATENCY_US=5
w="$libexec/gpushare-workload"
cycles=${GPUSHARE_STRESS_CYCLES:-100}

start_coordinator
for j in 1 2; do
  gpushare-run --sim --opportunistic --name "opp$j" -- "$w" --mem 256MiB --verify 1MiB \
    --verify-every 1 --kernels-per-iter 1 --kernel-us 500 --duration 3600 \
    --stop-file "$s/stop" --per-iteration --label "opp$j" >"$s/opp$j.out" 2>"$s/opp$j.err" &
  opp_pid[j]=$!
done
both() { resident opp1 "$@" && resident opp2 "$@"; }
iterations() { grep -c '"workload-iteration"' "$s/$1.out" || true; }
wait_for "both opportunistic jobs on the device" 20 both $((256 * MiB)) 0

steps=(init ctx alloc:plain:128MiB fill:1)
for ((i = 1; i <= cycles; i++)); do
  steps+=("?alloc:plain:384MiB" "?fill:$((2 * i))" "?alloc:plain:384MiB" "?fill:$((2 * i + 1))"
    "?check:$((2 * i + 1))" ready:"$s/grown-$i" wait:"$s/checked-$i" "?free" "?free"
    ready:"$s/released-$i" wait:"$s/restored-$i")
done
steps+=(check:1)
gpushare-run --sim --name prod -- "$c" "${steps[@]}" >"$s/prod.out" 2>"$s/prod.err" &
prod=$!

spills=0 restores=0
for ((i = 1; i <= cycles; i++)); do
  wait_for "cycle $i: the production job's growth" 30 test -e "$s/grown-$i"
  wait_for "cycle $i: both jobs spilled in ls" 10 both 0 $((256 * MiB))
  spills=$((spills + 2))
  n1=$(iterations opp1) n2=$(iterations opp2)
  wait_for "cycle $i: a data check of each job while spilled" 20 sh -c \
    "[ \$(grep -c workload-iteration '$s/opp1.out') -ge $((n1 + 2)) ] &&
     [ \$(grep -c workload-iteration '$s/opp2.out') -ge $((n2 + 2)) ]"
  touch "$s/checked-$i"
  wait_for "cycle $i: the production job's release" 30 test -e "$s/released-$i"
  wait_for "cycle $i: both jobs restored in ls" 10 both $((256 * MiB)) 0
  restores=$((restores + 2))
  n1=$(iterations opp1) n2=$(iterations opp2)
  wait_for "cycle $i: a data check of each job after the restore" 20 sh -c \
    "[ \$(grep -c workload-iteration '$s/opp1.out') -ge $((n1 + 2)) ] &&
     [ \$(grep -c workload-iteration '$s/opp2.out') -ge $((n2 + 2)) ]"
  touch "$s/restored-$i"
done
prod_status=0
wait "$prod" || prod_status=$?
touch "$s/stop"
mismatches=0 checks=0
for j in 1 2; do
  status=0
  wait "${opp_pid[j]}" || status=$?
  if [ "$status" -ne 0 ]; then
    grep -q "checksum mismatch" "$s/opp$j.err" && mismatches=$((mismatches + 1))
    echo "opp$j exited $status: $(cat "$s/opp$j.err")" >&2
  else
    checks=$((checks + $(jq -r 'select(.kind=="workload-summary") | .verifications' "$s/opp$j.out")))
  fi
done
allocations=$(jq -s '[.[] | select(.step=="alloc")] | length' "$s/prod.out")
failed=$(jq -s '[.[] | select(.step=="alloc" and .result!="CUDA_SUCCESS")] | length' "$s/prod.out")
bad_data=$(jq -s '[.[] | select((.step=="check" or .step=="fill") and .result!="CUDA_SUCCESS")] | length' \
  "$s/prod.out")
printf 'cycles %d production_allocations %d failed_production_allocations %d production_data_errors %d spills %d restores %d opportunistic_checks %d mismatches %d\n' \
  "$cycles" "$allocations" "$failed" "$bad_data" "$spills" "$restores" "$checks" "$mismatches"
[ "$prod_status" -eq 0 ] || fail "the production job exited $prod_status: $(tail -5 "$s/prod.out") $(cat "$s/prod.err")"
[ "$failed" -eq 0 ] || fail "$failed production allocations failed"
[ "$bad_data" -eq 0 ] || fail "the production job's own data check failed $bad_data times"
[ "$allocations" -eq $((2 * cycles + 1)) ] || fail "the production job made $allocations allocations"
[ "$mismatches" -eq 0 ] || fail "$mismatches opportunistic jobs saw a checksum mismatch"
[ "$checks" -ge $((4 * cycles)) ] || fail "only $checks data checks of the opportunistic jobs"
