#!/usr/bin/env bash
# On a real one-node Slurm (slurm.inc): the drain policy of the hooks. A
# coordinator that does not answer drains nothing (jobs run); a job that
# asks to be shared on a node whose gpushare install lacks the interposer
# makes the Prolog refuse: the node drains and the job is requeued held,
# as Slurm does for any failing Prolog.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/slurm/slurm.inc"

# A copy of the hooks in an install with no interposer, talking to no
# coordinator at all.
broken="$scratch/broken"
mkdir -p "$broken/share/gpushare" "$broken/bin"
cp -r "$GPUSHARE_PREFIX/share/gpushare/slurm" "$broken/share/gpushare/"
ln -s "$GPUSHARE_PREFIX/bin/gpushare-ctl" "$broken/bin/gpushare-ctl"
cat >"$slurm_dir/gpushare.conf" <<CONF
socket=$scratch/nobody-listens.sock
log_file=$slurm_dir/log/gpushare-hooks.log
state_dir=$slurm_dir/gpushare-state
CONF
for hook in prolog epilog taskprolog; do
  printf '#!/bin/sh\nGPUSHARE_SLURM_CONF=%s exec %s "$@"\n' \
    "$slurm_dir/gpushare.conf" "$broken/share/gpushare/slurm/gpushare-$hook" >"$slurm_dir/$hook"
  chmod 755 "$slurm_dir/$hook"
done
start_munge
write_slurm_conf "$slurm_dir/prolog" "$slurm_dir/epilog" "$slurm_dir/taskprolog"
start_slurm
log="$slurm_dir/log/gpushare-hooks.log"
submit() { sbatch --parsable --chdir="$scratch" -o "$scratch/job-%j.out" "$@"; }

# No coordinator, an unshared whole-GPU job: it runs, the node stays up.
plain=$(submit --gres=gpu:1 --wrap 'echo ran')
wait_job_done "$plain" 30
[ "$(job_state "$plain")" = COMPLETED ] || fail "job $plain ended $(job_state "$plain")"
expect_grep '^ran$' "$scratch/job-$plain.out"
expect_grep "job $plain: the coordinator at .* does not answer" "$log"
[ "$(sinfo -h -o %T)" = idle ] || fail "the node is $(sinfo -h -o %T) after a job without coordinator"

# A shared job where the interposer is missing: refused, node drained.
shared=$(submit --gres=shard:1 --comment=gpushare:opportunistic,mem=1GiB --wrap 'echo ran')
deadline=$(( $(date +%s) + 30 ))
until [[ "$(sinfo -h -o %T)" == drain* ]]; do
  [ "$(date +%s)" -lt "$deadline" ] || fail "the node did not drain: $(sinfo -h -o %T)"
  sleep 0.1
done
expect_grep "job $shared: refusing a shared job: the interposer .* is missing" "$log"
# Slurm requeues the refused job (held) a moment after the drain shows.
deadline=$(( $(date +%s) + 30 ))
until [ "$(job_state "$shared")" = PENDING ]; do
  [ "$(date +%s)" -lt "$deadline" ] || fail "job $shared: $(job_state "$shared"), not requeued"
  sleep 0.1
done
# (Slurm writes "Error running slurm prolog: 1" into its output.)
! grep -q '^ran$' "$scratch/job-$shared.out" 2>/dev/null || fail "the refused job ran"

# Back to service, as an administrator would once the install is fixed.
scancel "$shared"
scontrol update nodename="$(hostname -s)" state=resume
deadline=$(( $(date +%s) + 30 ))
until [ "$(sinfo -h -o %T)" = idle ]; do
  [ "$(date +%s)" -lt "$deadline" ] || fail "the node did not resume: $(sinfo -h -o %T)"
  sleep 0.1
done
