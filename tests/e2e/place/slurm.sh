#!/usr/bin/env bash
# --format slurm prints one line of sbatch/srun arguments per job; jobs
# that did not get GPUs are submitted held.
. "$(dirname "$0")/../common.inc"
data="$GPUSHARE_SOURCE_DIR/tests/data/place"

printf '%s\n' '{"id":"no room","tenant":"vision","gpus":8,"class":"production"}' |
  cat "$data/jobs.jsonl" - >"$scratch/jobs"
expect_exit 0 gpushare-place -c "$data/cluster.toml" -f slurm --jobs "$scratch/jobs"
cp "$scratch/out" "$scratch/slurm.txt"
expect_golden place/slurm.txt "$scratch/slurm.txt"

# Each line is shell words that a stand-in sbatch receives intact.
sbatch() { printf '%s\n' "$@" >>"$scratch/argv"; }
while read -r line; do eval "sbatch $line"; done <"$scratch/slurm.txt"
expect_grep '^--job-name=no room$' "$scratch/argv"
expect_grep '^--hold$' "$scratch/argv"
expect_grep '^--nodelist=n1,n2$' "$scratch/argv"
