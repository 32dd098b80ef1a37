#!/usr/bin/env bash
# A production job on several GPUs (a gang, one rank per GPU) is placed on
# GPUs of one node, and an opportunistic job placed beside its ranks, or
# beside a gang already running in the cluster file (the same job on each
# of its GPUs), is explained as such (--explain's "beside"); a state file
# written after placing keeps the gang whole for the next run.
. "$(dirname "$0")/../common.inc"

gpus() {  # NODE JOB: four 16 GiB GPUs, each running JOB (or nothing)
  echo "[[node]]"; echo "name = \"$1\""
  for i in 0 1 2 3; do
    printf '[[node.gpu]]\nindex = %d\nmem = "16GiB"\n' "$i"
    [ -z "$2" ] || printf '[[node.gpu.job]]\nid = "%s"\nclass = "production"\ntenant = "t"\n' "$2"
  done
}
{ printf '[[tenant]]\nname = "t"\nquota_gpus = 8\n'; gpus n1 llm; gpus n2 ""; } >"$scratch/cluster.toml"
cat >"$scratch/jobs.jsonl" <<'JOBS'
{"id":"ddp","tenant":"t","gpus":4,"class":"production","util":0.9}
{"id":"sweep","tenant":"t","class":"opportunistic"}
{"id":"sweep2","tenant":"t","gpus":2,"class":"opportunistic"}
JOBS
expect_exit 0 gpushare-place -c "$scratch/cluster.toml" --explain --jobs "$scratch/jobs.jsonl" \
  -s "$scratch/after.toml"
record() { jq -c --arg j "$1" 'select(.job == $j)' "$scratch/out"; }
# The gang of 4 on n2 whole (n1's GPUs all run llm).
record ddp | jq -e '.status == "placed" and .node == "n2" and .gpus == [0,1,2,3] and
  .explain.beside == null' >/dev/null || fail "ddp: $(record ddp)"
# n2 is now too busy for opportunistic jobs (0.9): they go beside llm's
# ranks on n1, and say so: which GPU, whose rank, of how many.
record sweep | jq -e '.node == "n1" and .gpus == [0] and
  .explain.beside == [{"node":"n1","gpu":0,"job":"llm","ranks":4,
    "gang":[{"node":"n1","gpus":[0,1,2,3]}],
    "detail":"beside one of the 4 ranks of production job '"'llm'"' (n1 GPUs 0,1,2,3): its steps wait for its slowest rank, so what this job takes from the rank on n1 GPU 0 it takes from all 4"}]' \
  >/dev/null || fail "sweep: $(record sweep)"
record sweep2 | jq -e '.node == "n1" and .gpus == [1,2] and
  ([.explain.beside[] | [.gpu, .job, .ranks]] == [[1,"llm",4],[2,"llm",4]])' >/dev/null ||
  fail "sweep2: $(record sweep2)"
# Without --explain the records carry no explanation at all.
gpushare-place -c "$scratch/cluster.toml" --jobs "$scratch/jobs.jsonl" >"$scratch/plain"
! grep -q beside "$scratch/plain" || fail "beside without --explain: $(cat "$scratch/plain")"
# As sbatch arguments: the gang on one node, its GPUs whole.
gpushare-place -c "$scratch/cluster.toml" -f slurm --jobs "$scratch/jobs.jsonl" >"$scratch/slurm"
expect_grep '^--job-name=ddp --nodes=1 --nodelist=n2 --gres=gpu:4 ' "$scratch/slurm"
# The opportunistic jobs beside llm's ranks, on GPUs Slurm gives llm
# whole: no shard of them is left, so they ask for no GPU gres.
expect_grep '^--job-name=sweep --nodes=1 --nodelist=n1 --export=ALL,GPUSHARE_QOS=opportunistic$' \
  "$scratch/slurm"
expect_grep '^--job-name=sweep2 --nodes=1 --nodelist=n1 --export=' "$scratch/slurm"
! grep -q shard "$scratch/slurm" || fail "shards beside GPUs held whole: $(cat "$scratch/slurm")"

# The next run starts from the state: ddp runs on n2's four GPUs, llm on
# n1's. With n2's utilisation lowered, a job of two opportunistic GPUs
# takes the least loaded, n1's GPU 3 and n2's GPU 0: beside a rank of each.
[ "$(grep -c '^id = "ddp"$' "$scratch/after.toml")" = 4 ] || fail "ddp is not on 4 GPUs in the state"
grep -q '^util = 0.9$' "$scratch/after.toml" || fail "no GPU at 0.9 in the state: $(cat "$scratch/after.toml")"
sed 's/^util = 0.9$/util = 0.0/' "$scratch/after.toml" >"$scratch/cooler.toml"
echo '{"id":"eval","tenant":"t","class":"opportunistic","gpus":2}' |
  gpushare-place -c "$scratch/cooler.toml" --explain >"$scratch/eval"
jq -e '.nodes == [{"node":"n1","gpus":[3]},{"node":"n2","gpus":[0]}] and
  [.explain.beside[] | [.node, .gpu, .job, .ranks, .gang]] ==
  [["n1",3,"llm",4,[{"node":"n1","gpus":[0,1,2,3]}]],["n2",0,"ddp",4,[{"node":"n2","gpus":[0,1,2,3]}]]]' \
  "$scratch/eval" >/dev/null || fail "eval: $(cat "$scratch/eval")"
echo ok
