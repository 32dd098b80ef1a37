#!/usr/bin/env bash
# gpushare-ctl migrate on a simulated node of two GPUs: a training job of
# 1 GiB that gpushare-run started (all GPUs visible) moves to GPU 1 while it
# trains, through the driver's process checkpoint called by the coordinator,
# in under 2 s (the time is printed); ls/show say migrating, then the new
# GPU; its limit and class move with it; NVML sees it there and nothing left
# on GPU 0; it moves back by UUID; it finishes with every iteration run and
# its data verified. The refusals change nothing: no such GPU, no room on
# the target, a job that sees one GPU (--gpu), an unknown job, another chip
# type, a coordinator run --checkpoint off.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
export GPUSHARE_SIM_DEVICES=2 GPUSHARE_SIM_MEMORY=4GiB GPUSHARE_SIM_CTX_OVERHEAD=256MiB
export GPUSHARE_SIM_EVICT=off
w="$libexec/gpushare-workload"
smi="$libexec/tests/gpushare-nvml-smi"
GiB=$((1 << 30))
# The coordinator loads the driver the jobs load.
LD_LIBRARY_PATH="$libexec/sim" start_coordinator
uuid() { LD_LIBRARY_PATH="$libexec/sim" "$smi" | jq -rs ".[$1].uuid"; }
gpu0=$(uuid 0); gpu1=$(uuid 1)
[ "$gpu0" != "$gpu1" ] && [ -n "$gpu1" ] && [ "$gpu1" != null ] || fail "two GPUs: '$gpu0' '$gpu1'"
# used_on JOB UUID: the job's bytes on that GPU, as show says.
used_on() {
  gpushare-ctl show "$1" | jq -r --arg u "$2" '.devices[] | select(.uuid == $u) | .mem_used_bytes'
}
nvml_used() { LD_LIBRARY_PATH="$libexec/sim" "$smi" | jq -rs ".[$1].memory.used_bytes"; }
gpu1_empty() { [ "$(nvml_used 1)" -eq 0 ]; }
nvml_has() {  # GPU PID: NVML lists the process on that GPU
  LD_LIBRARY_PATH="$libexec/sim" "$smi" | jq -se --argjson p "$2" ".[$1].processes | map(.pid) | index(\$p) != null" >/dev/null
}

gpushare-run --sim --name train --mem-limit 2GiB -- "$w" --mem 1GiB --verify 1GiB --verify-every 25 \
  --kernel-us 2000 --per-iteration --iterations 100000 --stop-file "$scratch/stop" \
  >"$scratch/train.out" 2>"$scratch/train.err" &
train=$!
wait_for "the job trains with its working set on GPU 0" 20 \
  show_has train ".launches > 0 and .iterations > 5 and ([.devices[] | select(.mem_used_bytes >= $GiB)] | length) == 1"
[ "$(used_on train "$gpu0")" -ge $GiB ] || fail "the job is not on GPU 0: $(gpushare-ctl show train)"
train_pid=$(gpushare-ctl show train | jq -r .pid)

# Refusals first, each leaving the job running where it was.
expect_exit 1 gpushare-ctl migrate train --to 7
expect_grep "no GPU '7'" "$scratch/err"
expect_exit 1 gpushare-ctl migrate nosuchjob --to 1
# No room on GPU 1: another job holds 3.5 GiB there.
gpushare-run --sim --gpu 1 --name hog -- "$w" --mem 3GiB --iterations 100000 \
  --stop-file "$scratch/stop-hog" >/dev/null 2>&1 &
hog=$!
wait_for "the hog holds GPU 1" 20 show_has hog ".mem_used_bytes >= 3 * $GiB"
expect_exit 1 gpushare-ctl migrate train --to 1
expect_grep "bytes free" "$scratch/err"
# A job that sees one GPU (gpushare-run --gpu) cannot be moved by the driver.
expect_exit 1 gpushare-ctl migrate hog --to 0
expect_grep "CUDA_VISIBLE_DEVICES" "$scratch/err"
touch "$scratch/stop-hog"
wait "$hog" || fail "the hog failed"
wait_for "GPU 1 empty" 10 gpu1_empty
show_has train '.state == "running" and .checkpoint_error == null' ||
  fail "a refusal touched the job: $(gpushare-ctl show train)"

# The move, while it trains.
before=$(gpushare-ctl show train | jq -r .iterations)
gpushare-ctl migrate train --to 1 >"$scratch/migrate.json" 2>"$scratch/migrate.err" ||
  fail "migrate: $(cat "$scratch/migrate.json" "$scratch/migrate.err")"
ms=$(jq -r .migration_ms "$scratch/migrate.json")
echo "migrated 1 GiB (and its context) from GPU 0 to GPU 1 in $ms ms"
[ "$ms" -lt 2000 ] || fail "the migration took $ms ms"
jq -e --arg u "$gpu1" --arg v "$gpu0" '.state != "migrating" and .qos == "production" and
  ([.devices[] | select(.uuid == $u)][0] | .mem_used_bytes >= 1073741824 and .mem_limit_bytes == 2147483648) and
  ([.devices[] | select(.uuid == $v)][0] | .mem_used_bytes == 0)' "$scratch/migrate.json" >/dev/null ||
  fail "after the move: $(cat "$scratch/migrate.json")"
nvml_has 1 "$train_pid" || fail "NVML does not see the job on GPU 1"
! nvml_has 0 "$train_pid" || fail "NVML still sees the job on GPU 0"
[ "$(nvml_used 0)" -eq 0 ] || fail "GPU 0 still holds $(nvml_used 0) bytes"
wait_for "the job training on GPU 1" 10 show_has train ".iterations > $before + 5"
gpushare-ctl ls | jq -e --arg u "$gpu1" 'select(.name == "train") | .devices[] | select(.uuid == $u) | .mem_used_bytes > 0' \
  >/dev/null || fail "ls does not show the job on GPU 1"
gpushare-ctl metrics >"$scratch/metrics.txt"
expect_grep "^gpushare_job_state\{.*job_name=\"train\".*state=\"migrating\"\} 0$" "$scratch/metrics.txt"

# Back by UUID, without waiting: the answer says migrating.
gpushare-ctl migrate train --to "$gpu0" --no-wait >"$scratch/back.json" || fail "migrate back"
jq -e '.state == "migrating"' "$scratch/back.json" >/dev/null ||
  fail "the answer does not say migrating: $(cat "$scratch/back.json")"
wait_for "the job back on GPU 0" 20 show_has train \
  "([.devices[] | select(.uuid == \"$gpu0\")][0].mem_used_bytes >= $GiB) and .state == \"running\""
nvml_has 0 "$train_pid" || fail "NVML does not see the job back on GPU 0"

touch "$scratch/stop"
wait "$train" || fail "the job failed: $(cat "$scratch/train.err")"
jq -se 'map(select(.kind == "workload-summary"))[0] as $s |
  ($s.verified_bytes == 1073741824 and $s.verifications >= 1 and $s.iterations > 0) and
  ([.[] | select(.kind == "workload-iteration") | .iteration] == [range(0; $s.iterations)])' \
  "$scratch/train.out" >/dev/null || fail "lost steps or data: $(tail -3 "$scratch/train.out")"
expect_grep "migrated from $gpu0 to $gpu1 in [0-9]+ ms" "$scratch/coordinator.log"
stop_coordinator

# Another chip type (GPU 1 has more SMs) and a coordinator without the
# checkpoint: refused.
rm -f "$GPUSHARE_SIM_STATE"
export GPUSHARE_SIM_SMS=108,132
for serve_args in "" "--checkpoint off"; do
  # shellcheck disable=SC2086
  LD_LIBRARY_PATH="$libexec/sim" start_coordinator $serve_args
  gpushare-run --sim --name chip -- "$w" --mem 256MiB --iterations 100000 \
    --stop-file "$scratch/stop-chip" >/dev/null 2>&1 &
  chip=$!
  wait_for "the job registered" 20 show_has chip ".mem_used_bytes > 0"
  expect_exit 1 gpushare-ctl migrate chip --to 1
  if [ -z "$serve_args" ]; then
    expect_grep "another chip type" "$scratch/err"
  else
    expect_grep "checkpoint off" "$scratch/err"
  fi
  touch "$scratch/stop-chip"
  wait "$chip" || fail "the job refused a migration failed"
  rm -f "$scratch/stop-chip"
  stop_coordinator
done
