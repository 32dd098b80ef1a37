#!/usr/bin/env bash
# A suspend through the driver's process checkpoint: a production job of
# plain memory, started without --suspendable, is suspended while it trains
# and holds 0 bytes on the GPU, its context included (NVML lists nothing);
# a job that fits only on an empty GPU runs meanwhile; resumed, the first
# finishes with every iteration run and its data verified. ls and show say
# which path the suspend took; with the checkpoint off (serve --checkpoint
# off) the older path is taken (suspend_path "memory") and the context stays.
# A coordinator killed while the job is checkpointed leaves it so; resume
# through the next one restores it.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
export GPUSHARE_SIM_MEMORY=2GiB GPUSHARE_SIM_EVICT=off GPUSHARE_SIM_CTX_OVERHEAD=256MiB
w="$libexec/gpushare-workload"
smi="$libexec/tests/gpushare-nvml-smi"
MiB=$((1 << 20))
nvml() { LD_LIBRARY_PATH="$libexec/sim" "$smi" | jq -s ".[0] | $1"; }

LD_LIBRARY_PATH="$libexec/sim" start_coordinator
gpushare-run --sim --name train -- "$w" --mem 768MiB --verify 768MiB --verify-every 20 \
  --kernel-us 2000 --per-iteration --iterations 100000 --stop-file "$scratch/stop" \
  >"$scratch/train.out" 2>"$scratch/train.err" &
train=$!
wait_for "the job trains" 20 show_has train ".mem_used_bytes >= 768 * $MiB and .iterations > 5"
train_pid=$(gpushare-ctl show train | jq -r .pid)

gpushare-ctl suspend train >"$scratch/suspend.json" 2>"$scratch/suspend.err" ||
  fail "suspend: $(cat "$scratch/suspend.json" "$scratch/suspend.err")"
jq -e '.state == "suspended" and .suspend_path == "checkpoint" and
  .mem_suspended_bytes >= 805306368' "$scratch/suspend.json" >/dev/null ||
  fail "suspend: $(cat "$scratch/suspend.json")"
[ "$(nvml .memory.used_bytes)" -eq 0 ] || fail "the GPU holds $(nvml .memory.used_bytes) bytes"
[ "$(nvml "[.processes[] | select(.pid == $train_pid)] | length")" -eq 0 ] ||
  fail "NVML lists the suspended job"
gpushare-ctl ls | jq -e 'select(.name == "train") | .suspend_path == "checkpoint"' >/dev/null ||
  fail "ls does not say how it was suspended"
held=$(gpushare-ctl show train | jq -r .iterations)
# The memory loop counts nothing of it on the GPU: an opportunistic job of
# 1 GiB, which would have to spill beside its 1 GiB, keeps no target.
gpushare-run --sim --opportunistic --name opp -- "$w" --mem 1GiB --iterations 100000 \
  --stop-file "$scratch/stop-opp" >"$scratch/opp.out" 2>&1 &
opp=$!
wait_for "the opportunistic job's memory on the GPU" 20 \
  show_has opp ".mem_device_resident_bytes == $((1024 * MiB))"
deadline=$(( $(now_ms) + 500 ))
while [ "$(now_ms)" -lt "$deadline" ]; do
  show_has opp '.devices[0].device_resident_target == null' ||
    fail "the checkpointed job's memory counted on the GPU: $(gpushare-ctl show opp)"
done
touch "$scratch/stop-opp"
wait "$opp" || fail "the opportunistic job failed: $(cat "$scratch/opp.out")"
# All but a context's worth of the GPU: fits only while train holds nothing.
gpushare-run --sim --name urgent -- "$w" --mem 1700MiB --iterations 20 >"$scratch/urgent.out" 2>&1 ||
  fail "the urgent job failed: $(cat "$scratch/urgent.out")"
[ "$(gpushare-ctl show train | jq -r .iterations)" -eq "$held" ] ||
  fail "the suspended job ran iterations"

gpushare-ctl resume train >"$scratch/resume.json" 2>"$scratch/resume.err" ||
  fail "resume: $(cat "$scratch/resume.json" "$scratch/resume.err")"
jq -e '.state == "running"' "$scratch/resume.json" >/dev/null || fail "resume: $(cat "$scratch/resume.json")"
[ "$(nvml .memory.used_bytes)" -ge $((1024 * MiB)) ] || fail "not back on the GPU"
wait_for "the job training again" 20 show_has train ".iterations > $held + 5"

# A coordinator that dies leaves the job checkpointed (nobody but a resume
# undoes it); the next one finds it so in the driver when asked to resume.
gpushare-ctl suspend train >/dev/null || fail "the second suspend"
[ "$(nvml .memory.used_bytes)" -eq 0 ] || fail "the second suspend left bytes on the GPU"
stop_coordinator KILL
LD_LIBRARY_PATH="$libexec/sim" start_coordinator
wait_for "the job registered again" 20 show_has train ".pid == $train_pid"
[ "$(nvml .memory.used_bytes)" -eq 0 ] || fail "the job came back without a resume"
held=$(gpushare-ctl show train | jq -r .iterations)
gpushare-ctl resume train >"$scratch/resume.json" 2>"$scratch/resume.err" ||
  fail "resume after a coordinator died: $(cat "$scratch/resume.json" "$scratch/resume.err")"
wait_for "the job training after the coordinator died" 20 show_has train ".iterations > $held + 5"
touch "$scratch/stop"
wait "$train" || fail "the job failed: $(cat "$scratch/train.err")"
jq -se 'map(select(.kind == "workload-summary"))[0] as $s |
  ($s.verified_bytes == 805306368 and $s.verifications >= 1) and
  ([.[] | select(.kind == "workload-iteration") | .iteration] == [range(0; $s.iterations)])' \
  "$scratch/train.out" >/dev/null || fail "lost steps or data: $(tail -3 "$scratch/train.out")"
expect_grep "suspended through the driver's checkpoint in [0-9]+ ms" "$scratch/coordinator.log"
stop_coordinator

# The older path where the checkpoint is off: its memory moves, its context stays.
LD_LIBRARY_PATH="$libexec/sim" start_coordinator --checkpoint off
rm -f "$scratch/stop"
gpushare-run --sim --suspendable --name old -- "$w" --mem 512MiB --iterations 100000 \
  --stop-file "$scratch/stop" >"$scratch/old.out" 2>&1 &
old=$!
wait_for "the job trains" 20 show_has old ".mem_used_bytes >= 512 * $MiB and .iterations > 2"
gpushare-ctl suspend old >"$scratch/suspend.json" || fail "suspend: $(cat "$scratch/suspend.json")"
jq -e '.state == "suspended" and .suspend_path == "memory"' "$scratch/suspend.json" >/dev/null ||
  fail "suspend with the checkpoint off: $(cat "$scratch/suspend.json")"
[ "$(nvml .memory.used_bytes)" -ge $((256 * MiB)) ] || fail "its context is gone on the older path"
gpushare-ctl resume old >/dev/null || fail "resume on the older path"
touch "$scratch/stop"
wait "$old" || fail "the job failed on the older path: $(cat "$scratch/old.out")"
