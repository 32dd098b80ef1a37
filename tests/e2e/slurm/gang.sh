#!/usr/bin/env bash
# On a real one-node Slurm (slurm.inc): a production job on two GPUs,
# `sbatch --gres=gpu:2 --gpushare=production` (the job comment where the
# SPANK plugin was not built), whose batch script starts one rank per GPU
# with srun, is ONE job in `gpushare-ctl ls`: one record named
# slurm-<jobid>, two ranks on two GPUs, with an opportunistic job on each
# of those GPUs beside it. The Prolog makes the job's tree file (owned by
# the job's user, private) and the Epilog removes it. Ranks started by
# srun alone, with no batch script to inherit from, are one job too.
# Another user who names the job's tree file and its name joins nothing:
# its process is a job of its own.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"
. "$e2e_dir/slurm/slurm.inc"

hooks="$GPUSHARE_PREFIX/share/gpushare/slurm"
plugin="$GPUSHARE_PREFIX/lib/gpushare/spank_gpushare.so"
state_dir="$slurm_dir/gpushare-state"
cat >"$slurm_dir/gpushare.conf" <<CONF
socket=$GPUSHARE_SOCKET
log_file=$slurm_dir/log/gpushare-hooks.log
epilog_wait_s=5
state_dir=$state_dir
CONF
for hook in prolog epilog taskprolog; do
  printf '#!/bin/sh\nGPUSHARE_SLURM_CONF=%s exec %s "$@"\n' \
    "$slurm_dir/gpushare.conf" "$hooks/gpushare-$hook" >"$slurm_dir/$hook"
  chmod 755 "$slurm_dir/$hook"
done
plugstack=
production=(--comment=gpushare:production)
if [ -f "$plugin" ]; then
  plugstack="$slurm_dir/plugstack.conf"
  echo "required $plugin interposer=$libexec/libgpushare-interpose.so socket=$GPUSHARE_SOCKET" >"$plugstack"
  production=(--gpushare=production)
else
  echo "note: $plugin was not built (no slurm/spank.h): the job asks by its comment"
fi

start_munge
write_slurm_conf "$slurm_dir/prolog" "$slurm_dir/epilog" "$slurm_dir/taskprolog" "$plugstack"
start_slurm
start_coordinator
log="$slurm_dir/log/gpushare-hooks.log"

export LD_LIBRARY_PATH="$libexec/sim"
export GPUSHARE_SIM_DEVICES=2 GPUSHARE_SIM_MEMORY=4GiB GPUSHARE_SIM_CTX_OVERHEAD=256MiB
workload="$libexec/gpushare-workload"
step="--mem 64MiB --verify 1MiB --kernels-per-iter 1 --kernel-us 4000 --host-us 4000 --iterations 100000000"
submit() { sbatch --parsable --chdir="$scratch" -o "$scratch/job-%j.out" -e "$scratch/job-%j.err" "$@"; }
records() { gpushare-ctl ls | jq -c --arg n "slurm-$1" 'select(.name == $n)'; }
# The GPUs a job holds memory on (UUIDs, sorted, one line).
gpus_of() { records "$1" | jq -s -c '[.[].devices[] | select(.mem_used_bytes > 0) | .uuid] | unique'; }

# One rank per task, torchrun's variables from srun's.
cat >"$scratch/rank.sh" <<SH
#!/bin/sh
export RANK=\$SLURM_PROCID WORLD_SIZE=\$SLURM_NTASKS LOCAL_RANK=\$SLURM_LOCALID
exec $workload --allreduce 100MB $step --rendezvous "slurm-\$SLURM_JOB_ID" --stop-file "\$1"
SH
chmod 755 "$scratch/rank.sh"

# An opportunistic job on each GPU. Slurm gives a GPU to one job as gres
# (gpu and shard exclude each other on a device), so a job beside a
# production job's GPUs asks for none and names its GPU in its script
# (Slurm unsets a CUDA_VISIBLE_DEVICES passed by --export in a job without
# GPUs; gpushare-slurm(7)).
opp=()
for d in 0 1; do
  opp[d]=$(submit --comment=gpushare:opportunistic,mem=1GiB \
    --wrap "export CUDA_VISIBLE_DEVICES=$d; exec $workload $step --stop-file $scratch/stop-opp --label opp$d")
done
for d in 0 1; do
  wait_for "opportunistic job ${opp[d]} holding memory" 30 sh -c \
    "[ \"\$(gpushare-ctl ls | jq -r --arg n slurm-${opp[d]} 'select(.name == \$n) | .devices[] | select(.mem_used_bytes > 0) | .uuid')\" != '' ]"
done

# The production job: sbatch, two ranks by srun in its batch script.
cat >"$scratch/gang.sh" <<SH
#!/bin/sh
exec srun -n2 $scratch/rank.sh $scratch/stop-gang
SH
gang=$(submit --gres=gpu:2 -n2 "${production[@]}" "$scratch/gang.sh")
one_job_two_ranks() {  # JOBID
  local all; all=$(records "$1" | jq -s -c .)
  jq -e 'length == 1 and .[0].qos == "production" and (.[0].ranks | length) == 2 and
    ([.[0].ranks[].gpus[]] | unique | length) == 2 and all(.[0].ranks[]; (.gpus | length) == 1)' \
    <<<"$all" >/dev/null
}
wait_for "job $gang as one job with two ranks" 60 one_job_two_ranks "$gang"
record=$(records "$gang")
echo "gang: $(jq -c '{id, name, uid, pids, ranks: [.ranks[] | {pid, gpus}]}' <<<"$record")"
tree="$state_dir/$gang.tree"
[ -f "$tree" ] || fail "the Prolog made no tree file $tree"
[ "$(stat -c '%u %a' "$tree")" = "0 600" ] || fail "the tree file is $(stat -c '%u %a' "$tree")"
# Beside each rank, one opportunistic job on its GPU.
gang_gpus=$(jq -c '[.ranks[].gpus[]] | unique' <<<"$record")
opp_gpus=$( (gpus_of "${opp[0]}"; gpus_of "${opp[1]}") | jq -s -c 'add | unique')
[ "$gang_gpus" = "$opp_gpus" ] ||
  fail "ranks on $gang_gpus, opportunistic jobs on $opp_gpus: $(records "${opp[0]}"; records "${opp[1]}"; head -c 2000 "$scratch/job-${opp[1]}.out")"
[ "$(gpus_of "${opp[0]}")" != "$(gpus_of "${opp[1]}")" ] || fail "both opportunistic jobs on one GPU"
for d in 0 1; do
  records "${opp[d]}" | jq -e '.qos == "opportunistic"' >/dev/null ||
    fail "job ${opp[d]} is not opportunistic: $(records "${opp[d]}")"
done

# Another user names the job's tree file and its name: it cannot open the
# file, and the coordinator would not take it; a job of its own.
mkdir -m 0777 "$scratch/nobody"
setpriv --reuid nobody --regid nogroup --clear-groups -- env GPUSHARE_SIM_STATE="$scratch/nobody/sim" \
  GPUSHARE_TREE="$tree" GPUSHARE_JOB="slurm-$gang" GPUSHARE_QOS=production \
  LD_PRELOAD="$libexec/libgpushare-interpose.so" \
  $workload $step --stop-file "$scratch/stop-decoy" --label decoy >"$scratch/decoy.log" 2>&1 &
decoy=$!
wait_for "the decoy in gpushare-ctl ls" 20 sh -c \
  "gpushare-ctl ls | jq -e --argjson p $decoy 'select(.pid == \$p and .uid != 0)'"
[ "$(records "$gang" | jq -s 'length')" = 2 ] || fail "not two records named slurm-$gang: $(records "$gang")"
gpushare-ctl ls | jq -s -e --argjson id "$(jq .id <<<"$record")" --argjson p "$decoy" \
  '[.[] | select(.id == $id)] | length == 1 and
   (.[0] | (.pids | index($p)) == null and .uid == 0 and (.ranks | length) == 2)' >/dev/null ||
  fail "the decoy joined job $gang: $(gpushare-ctl ls)"
touch "$scratch/stop-decoy"
wait "$decoy" || fail "the decoy failed: $(cat "$scratch/decoy.log")"

# The job ends: its tree file goes with it (the Epilog).
touch "$scratch/stop-gang"
wait_job_done "$gang" 30
[ "$(job_state "$gang")" = COMPLETED ] || fail "job $gang ended $(job_state "$gang"): $(cat "$scratch/job-$gang.err")"
[ ! -e "$tree" ] || fail "the Epilog left $tree"
expect_grep "job $gang: ended" "$log"

# srun alone (no batch script whose tree the ranks could inherit): still
# one job, beside the same opportunistic jobs.
rm -f "$scratch/stop-gang"
srun --gres=gpu:2 -n2 "${production[@]}" --chdir="$scratch" -o "$scratch/srun-%j.out" \
  "$scratch/rank.sh" "$scratch/stop-gang" &
srun_pid=$!
wait_for "a job from srun" 30 sh -c "squeue -h -o '%i %j' | grep -q ' rank.sh$'"
direct=$(squeue -h -o '%i %j' | awk '$2 == "rank.sh" { print $1 }')
wait_for "srun job $direct as one job with two ranks" 60 one_job_two_ranks "$direct"
touch "$scratch/stop-gang"
wait "$srun_pid" || fail "srun failed: $(cat "$scratch"/srun-*.out)"

touch "$scratch/stop-opp"
for d in 0 1; do wait_job_done "${opp[d]}" 30; done
echo "ok"
