#!/usr/bin/env bash
# On a real one-node Slurm (slurm.inc): sbatch jobs run gpushare-workload
# on the simulated GPU under the gpushare hooks. A --gres=gpu:1 job is
# production, two shard jobs on one GPU are opportunistic with the limits
# they asked for (through the job comment, and through the SPANK plugin's
# --gpushare where it was built), all named by their Slurm job id in
# `gpushare-ctl ls`; a shard job over its limit fails with out-of-memory in
# its own output and hurts nothing else; scancel reclaims a job's memory
# within 1 s; the Epilog kills and reclaims a process that escaped the
# job; a bad --gpushare fails sbatch, a bad comment runs the job unshared;
# a shard job that asks for nothing is opportunistic; a batch script that
# ends with exec leaves no tree file behind; a job placed by
# gpushare-place --format slurm runs with its class and memory limit.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"
. "$e2e_dir/slurm/slurm.inc"

hooks="$GPUSHARE_PREFIX/share/gpushare/slurm"
plugin="$GPUSHARE_PREFIX/lib/gpushare/spank_gpushare.so"
# The hooks read the site settings from GPUSHARE_SLURM_CONF: a wrapper per
# hook points them at this test's coordinator (a site uses /etc/gpushare).
cat >"$slurm_dir/gpushare.conf" <<CONF
socket=$GPUSHARE_SOCKET
log_file=$slurm_dir/log/gpushare-hooks.log
epilog_wait_s=5
state_dir=$slurm_dir/gpushare-state
CONF
for hook in prolog epilog taskprolog; do
  printf '#!/bin/sh\nGPUSHARE_SLURM_CONF=%s exec %s "$@"\n' \
    "$slurm_dir/gpushare.conf" "$hooks/gpushare-$hook" >"$slurm_dir/$hook"
  chmod 755 "$slurm_dir/$hook"
done
plugstack=
if [ -f "$plugin" ]; then
  plugstack="$slurm_dir/plugstack.conf"
  echo "required $plugin interposer=$libexec/libgpushare-interpose.so socket=$GPUSHARE_SOCKET" >"$plugstack"
else
  echo "note: $plugin was not built (no slurm/spank.h): --gpushare is not tested"
fi

start_munge
write_slurm_conf "$slurm_dir/prolog" "$slurm_dir/epilog" "$slurm_dir/taskprolog" "$plugstack"
start_slurm
start_coordinator
log="$slurm_dir/log/gpushare-hooks.log"

# What every job inherits (sbatch exports the environment): the simulated
# GPU, two devices of 4 GiB, shared through one state file.
export LD_LIBRARY_PATH="$libexec/sim"
export GPUSHARE_SIM_DEVICES=2 GPUSHARE_SIM_MEMORY=4GiB GPUSHARE_SIM_CTX_OVERHEAD=256MiB
workload="$libexec/gpushare-workload"
long="$workload --mem 64MiB --verify 1MiB --iterations 100000000 --kernel-us 1000"
submit() { sbatch --parsable --chdir="$scratch" -o "$scratch/job-%j.out" -e "$scratch/job-%j.err" "$@"; }
record() { gpushare-ctl ls | jq -c --arg n "slurm-$1" 'select(.name == $n)'; }
listed() { [ -n "$(record "$1")" ]; }

prod=$(submit --gres=gpu:1 --wrap "exec $long --label prod")
opp1=$(submit --gres=shard:2 --comment=gpushare:opportunistic,mem=1GiB --wrap "exec $long --label opp1")
if [ -n "$plugstack" ]; then
  opp2=$(submit --gres=shard:2 --gpushare=opportunistic,mem=512MiB,compute=30 --wrap "exec $long --label opp2")
  opp2_limit=536870912
else
  opp2=$(submit --gres=shard:2 --comment=gpushare:opportunistic,mem=512MiB --wrap "exec $long --label opp2")
  opp2_limit=536870912
fi
for job in "$prod" "$opp1" "$opp2"; do
  wait_for "job $job in gpushare-ctl ls" 30 listed "$job"
done
record "$prod" | jq -e '.qos == "production" and .mem_limit_bytes == null' >/dev/null ||
  fail "the gpu:1 job is not production without a limit: $(record "$prod")"
record "$opp1" | jq -e '.qos == "opportunistic" and .mem_limit_bytes == 1073741824' >/dev/null ||
  fail "the comment job is not opportunistic at 1 GiB: $(record "$opp1")"
record "$opp2" | jq -e --argjson l "$opp2_limit" '.qos == "opportunistic" and .mem_limit_bytes == $l' \
  >/dev/null || fail "the shard job is not opportunistic at 512 MiB: $(record "$opp2")"
# Both shard jobs share one GPU; the whole-GPU job has the other.
gpus() { scontrol show job -d "$1" | sed -n 's/.*GRES=.*(IDX:\([0-9-]*\)).*/\1/p'; }
[ "$(gpus "$opp1")" = "$(gpus "$opp2")" ] || fail "the shard jobs are on GPUs $(gpus "$opp1") and $(gpus "$opp2")"
[ "$(gpus "$prod")" != "$(gpus "$opp1")" ] || fail "a whole GPU was also sharded"

# Over its limit: out of memory in its own output, nothing else hurt.
greedy=$(submit --gres=shard:1 --comment=gpushare:opportunistic,mem=256MiB --wrap "exec $workload --mem 1GiB --iterations 2")
wait_job_done "$greedy" 30
expect_grep 'CUDA_ERROR_OUT_OF_MEMORY' "$scratch/job-$greedy.err"
[ "$(job_state "$greedy")" = FAILED ] || fail "the greedy job ended $(job_state "$greedy")"
for job in "$prod" "$opp1" "$opp2"; do
  [ "$(job_state "$job")" = RUNNING ] || fail "job $job is $(job_state "$job") after the greedy job"
  listed "$job" || fail "job $job left gpushare after the greedy job"
done

# A batch script that ends with exec leaves no tree file behind: its
# tasks share the job's tree file, which the Prolog made and the Epilog
# removes (gpushare-slurm(7), jobs on several GPUs); a process whose
# GPUSHARE_TREE names one makes none of its own in /dev/shm.
ends_exec=$(submit --gres=shard:1 --wrap \
  "echo \"\$GPUSHARE_TREE\" >$scratch/exec-tree; exec $workload --mem 64MiB --iterations 2")
wait_job_done "$ends_exec" 30
[ "$(job_state "$ends_exec")" = COMPLETED ] || fail "the exec job ended $(job_state "$ends_exec")"
exec_tree=$(cat "$scratch/exec-tree")
[ "$exec_tree" = "$slurm_dir/gpushare-state/$ends_exec.tree" ] || fail "the exec job's tree: '$exec_tree'"
[ -e "$exec_tree" ] && fail "the Epilog left the job's tree file $exec_tree behind"

# A bad comment: the job runs unshared and says why in its output.
bad=$(submit --gres=shard:1 --comment=gpushare:sometimes --wrap 'echo "preload=[${LD_PRELOAD:-}]"')
wait_job_done "$bad" 30
expect_grep "gpushare: error: job comment 'gpushare:sometimes': class 'sometimes'" "$scratch/job-$bad.out"
expect_grep '^preload=\[\]$' "$scratch/job-$bad.out"
# A shard job that asks for nothing is opportunistic (the default
# shard_class), with no limit of its own.
plain=$(submit --gres=shard:1 --wrap "exec $long --label plain")
wait_for "job $plain in gpushare-ctl ls" 30 listed "$plain"
record "$plain" | jq -e '.qos == "opportunistic" and .mem_limit_bytes == null' >/dev/null ||
  fail "a plain shard job is not opportunistic without a limit: $(record "$plain")"
scancel "$plain"
wait_job_done "$plain" 30
# A bad --gpushare fails at submission, naming what is wrong.
if [ -n "$plugstack" ]; then
  # (sbatch exits 255 for a rejected option; no job is queued.)
  queued=$(squeue -h | wc -l)
  expect_exit 255 sbatch --gpushare=sometimes --wrap true
  expect_grep "unknown class 'sometimes' \\(expected production or opportunistic\\)" "$scratch/err"
  expect_exit 255 sbatch --gpushare=opportunistic,mem=lots --wrap true
  expect_grep "bad 'mem=lots'" "$scratch/err"
  [ "$(squeue -h | wc -l)" -eq "$queued" ] || fail "a rejected --gpushare job was queued"
fi

# scancel: the coordinator reclaims the job's memory within 1 s.
record "$opp1" | jq -e '.mem_used_bytes > 0' >/dev/null || fail "opp1 holds no memory: $(record "$opp1")"
start_ms=$(now_ms)
scancel "$opp1"
until ! listed "$opp1"; do
  [ $(( $(now_ms) - start_ms )) -lt 5000 ] || fail "job $opp1 still registered 5 s after scancel"
  sleep 0.01
done
reclaim_ms=$(( $(now_ms) - start_ms ))
echo "{\"kind\":\"measure\",\"version\":1,\"scancel_reclaim_ms\":$reclaim_ms}"
[ "$reclaim_ms" -le 1000 ] || fail "scancel took ${reclaim_ms} ms to reclaim job $opp1's memory"

# A process that escapes the job (double fork, new session): Slurm's
# linuxproc tracking loses it, the Epilog finds it registered, kills it and
# the coordinator reclaims it before the node takes the next job.
escapee=$(submit --gres=shard:1 --comment=gpushare:opportunistic,mem=1GiB --wrap \
  "(setsid $long --label escapee </dev/null >$scratch/escapee.log 2>&1 &); sleep 30")
wait_for "job $escapee in gpushare-ctl ls" 30 listed "$escapee"
escapee_pid=$(record "$escapee" | jq -r .pid)
# The attacker: another user's process that names itself after the job.
# The Epilog goes by the coordinator's uid, not the name: it stays.
mkdir -m 0777 "$scratch/nobody"
setpriv --reuid nobody --regid nogroup --clear-groups -- env GPUSHARE_SIM_STATE="$scratch/nobody/sim" \
  GPUSHARE_JOB="slurm-$escapee" GPUSHARE_QOS=opportunistic LD_PRELOAD="$libexec/libgpushare-interpose.so" \
  $long --label decoy >"$scratch/decoy.log" 2>&1 &
decoy_pid=$!
wait_for "the decoy in gpushare-ctl ls" 10 sh -c \
  "gpushare-ctl ls | jq -e --argjson p $decoy_pid 'select(.pid == \$p and .uid != 0)'"
scancel "$escapee"
wait_job_done "$escapee" 30
kill -0 "$decoy_pid" || fail "the Epilog killed another user's process: $(cat "$scratch/decoy.log")"
expect_grep "job $escapee: gpushare job [0-9]+ \\(pid $decoy_pid, uid [0-9]+\\) is named like this job but not its user's: left alone" "$log"
kill "$decoy_pid"
wait "$decoy_pid" || true
wait_for "the decoy to leave" 5 sh -c "! gpushare-ctl ls | jq -e --argjson p $decoy_pid 'select(.pid == \$p)'"
! listed "$escapee" || fail "job $escapee is still registered after its Epilog"
# (Once killed it may linger as a zombie where pid 1 does not reap.)
state=$(ps -o stat= -p "$escapee_pid" || true)
[ -z "$state" ] || [[ $state == Z* ]] || fail "the escaped process $escapee_pid still runs ($state)"
expect_grep "job $escapee: gpushare job [0-9]+ \\(pid $escapee_pid\\) still registered: killing it" "$log"
[ "$(sinfo -h -o %T)" = idle ] || [ "$(sinfo -h -o %T)" = mixed ] || fail "the node is $(sinfo -h -o %T)"

# gpushare-place reads this cluster from Slurm and the coordinator, and its
# --format slurm line is what sbatch gets, as it is.
"$hooks/gpushare-slurm-state" "$scratch/state"
host=$(hostname -s)
[ -s "$scratch/state/$host.jsonl" ] || fail "no telemetry of $host collected"
cat >"$scratch/cluster.toml" <<TOML
[[tenant]]
name = "root"
quota_gpus = 2
[[node]]
name = "$host"
[[node.gpu]]
index = 0
model = "simulated"
mem = "4GiB"
[[node.gpu]]
index = 1
model = "simulated"
mem = "4GiB"
TOML
echo '{"id":"placed","tenant":"root","class":"opportunistic","mem_bytes":536870912}' >"$scratch/placed.json"
gpushare-place -c "$scratch/cluster.toml" --slurm-state "$scratch/state" -s "$scratch/after.toml" \
  -f slurm <"$scratch/placed.json" >"$scratch/line"
# Slurm's running jobs are in the state placement started from.
for job in "$prod" "$opp2"; do expect_grep "^id = \"slurm-$job\"$" "$scratch/after.toml"; done
# Placed on a GPU of its own, it asks for a shard of it; placed beside the
# whole-GPU production job, for no GPU (Slurm gives no shard of a GPU held
# whole), and names its GPU itself, from --format env (gpushare-slurm(7)).
gpushare-place -c "$scratch/cluster.toml" --slurm-state "$scratch/state" -f env \
  <"$scratch/placed.json" >"$scratch/env"
visible=$(sed -n 's/^export CUDA_VISIBLE_DEVICES=//p' "$scratch/env")
[ -n "$visible" ] || fail "no CUDA_VISIBLE_DEVICES in the placement's environment: $(cat "$scratch/env")"
prod_gpu=$(gpus "$prod")
if [ "$visible" = "$prod_gpu" ]; then
  expect_grep "^--job-name=placed --nodes=1 --nodelist=$host --export=ALL,GPUSHARE_QOS=opportunistic," "$scratch/line"
else
  expect_grep "^--job-name=placed --nodes=1 --nodelist=$host --gres=shard:1 " "$scratch/line"
fi
placed=$(eval "submit $(cat "$scratch/line") --wrap 'export CUDA_VISIBLE_DEVICES=$visible; exec $long --label placed'")
wait_for "the placed job in gpushare-ctl ls" 30 listed "$placed"
record "$placed" | jq -e '.qos == "opportunistic" and .mem_limit_bytes == 536870912' >/dev/null ||
  fail "the placed job is not opportunistic at its 512 MiB: $(record "$placed")"
scancel "$placed"
wait_job_done "$placed" 30

# The rest ends; the Epilog leaves nothing of any job registered.
scancel "$prod" "$opp2"
for job in "$prod" "$opp2"; do wait_job_done "$job" 30; done
[ -z "$(gpushare-ctl ls | jq -r 'select(.name | startswith("slurm-")) | .name')" ] ||
  fail "jobs still registered after their Epilog: $(gpushare-ctl ls)"
expect_grep "job $prod: ended" "$log"
[ "$(sinfo -h -o %T)" = idle ] || fail "the node is $(sinfo -h -o %T) after the jobs"
