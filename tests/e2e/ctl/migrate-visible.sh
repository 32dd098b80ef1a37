#!/usr/bin/env bash
# Device visibility and migration on a simulated node of two GPUs. A job
# started with `gpushare-run --gpu 1 --movable` sees both GPUs
# (CUDA_VISIBLE_DEVICES=1,0) and trains on GPU 1
# (its CUdevice 0): `node` counts it on GPU 1 only (a process is counted on
# the GPUs where it holds a context or memory, not on every GPU it sees);
# `migrate` moves it to GPU 0 (the driver restores a process onto GPUs it
# sees), and `node` then counts it on GPU 0 only; it loses no iteration and
# its data verifies. A job started with `gpushare-run --gpu 1` sees one GPU:
# `migrate` refuses it, saying why and what would make it movable, and the
# job runs on where it was.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"
[ -f "$libexec/sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
export GPUSHARE_SIM_DEVICES=2 GPUSHARE_SIM_MEMORY=4GiB GPUSHARE_SIM_CTX_OVERHEAD=256MiB
export GPUSHARE_SIM_EVICT=off
w="$libexec/gpushare-workload"
GiB=$((1 << 30))
LD_LIBRARY_PATH="$libexec/sim" start_coordinator
two_sim_gpus

expect_exit 125 gpushare-run --sim --movable -- true  # --movable needs --gpu
expect_grep "movable needs --gpu" "$scratch/err"
gpushare-run --sim --gpu 1 --movable --name movable -- "$w" --mem 1GiB --verify 1GiB \
  --verify-every 25 --kernel-us 2000 --per-iteration --iterations 100000 \
  --stop-file "$scratch/stop" >"$scratch/movable.out" 2>"$scratch/movable.err" &
movable=$!
wait_for "the job trains on GPU 1" 20 show_has movable \
  ".iterations > 5 and ([.devices[] | select(.uuid == \"$gpu1\")][0].mem_used_bytes >= $GiB)"
show_has movable "(.devices | length) == 2" || fail "the job does not see both GPUs: $(gpushare-ctl show movable)"
wait_for "node counting the job on GPU 1 only" 5 counted 0 1
show_has movable ".device == \"$gpu1\"" || fail "ls does not name GPU 1: $(gpushare-ctl show movable)"

gpushare-run --sim --gpu 1 --name pinned -- "$w" --mem 256MiB --iterations 1000000 \
  --stop-file "$scratch/stop-pinned" >/dev/null 2>"$scratch/pinned.err" &
pinned=$!
wait_for "the pinned job holds GPU 1" 20 show_has pinned ".mem_used_bytes > 0"
expect_exit 1 gpushare-ctl migrate pinned --to 0
expect_grep "sees only $gpu1 \(CUDA_VISIBLE_DEVICES\)" "$scratch/err"
expect_grep "gpushare-run --gpu N --movable" "$scratch/err"
show_has pinned '.state == "running"' || fail "the refusal touched the job: $(gpushare-ctl show pinned)"
touch "$scratch/stop-pinned"
wait "$pinned" || fail "the pinned job failed: $(cat "$scratch/pinned.err")"
wait_for "node counting the movable job alone" 10 counted 0 1

before=$(gpushare-ctl show movable | jq -r .iterations)
gpushare-ctl migrate movable --to "$gpu0" >"$scratch/migrate.json" 2>"$scratch/migrate.err" ||
  fail "migrate: $(cat "$scratch/migrate.json" "$scratch/migrate.err")"
echo "moved the job from GPU 1 to GPU 0 in $(jq -r .migration_ms "$scratch/migrate.json") ms"
jq -e --arg u "$gpu0" '[.devices[] | select(.uuid == $u)][0].mem_used_bytes >= 1073741824' \
  "$scratch/migrate.json" >/dev/null || fail "after the move: $(cat "$scratch/migrate.json")"
wait_for "node counting the job on GPU 0 only" 5 counted 1 0
show_has movable ".device == \"$gpu0\"" || fail "ls does not name GPU 0: $(gpushare-ctl show movable)"
wait_for "the job training on GPU 0" 10 show_has movable ".iterations > $before + 5"

touch "$scratch/stop"
wait "$movable" || fail "the job failed: $(cat "$scratch/movable.err")"
jq -se 'map(select(.kind == "workload-summary"))[0] as $s |
  ($s.verified_bytes == 1073741824 and $s.verifications >= 1) and
  ([.[] | select(.kind == "workload-iteration") | .iteration] == [range(0; $s.iterations)])' \
  "$scratch/movable.out" >/dev/null || fail "lost steps or data: $(tail -3 "$scratch/movable.out")"
stop_coordinator
