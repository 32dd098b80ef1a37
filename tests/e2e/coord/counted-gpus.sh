#!/usr/bin/env bash
# A job is counted only on the GPUs it uses (gpushare-ctl(1), node): a
# process that sees both of a node's GPUs is counted on both while it holds
# nothing on either, on GPU 1 alone once it holds a context there (with no
# memory: the simulator's contexts here cost 0 bytes, so the context count
# the interposer publishes, control block layout 9, is the only sign), and
# on both again once it let the context go; the same for a context of its
# own (cuCtxCreate, then cuCtxDestroy) on GPU 0.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"
. "$e2e_dir/coord.inc"
export GPUSHARE_SIM_DEVICES=2 GPUSHARE_SIM_MEMORY=1GiB GPUSHARE_SIM_CTX_OVERHEAD=0
c="$libexec/tests/gpushare-cuda-client"
s=$scratch
two_sim_gpus

start_coordinator
gpushare-run --sim --name user -- "$c" init ready:"$s/registered" wait:"$s/go" ctx:1 \
  ready:"$s/context" wait:"$s/release" ctx-release:1 ready:"$s/released" wait:"$s/create" \
  ctx-create:0 ready:"$s/created" wait:"$s/destroy" ctx-destroy ready:"$s/destroyed" wait:"$s/end" \
  >"$s/user.out" 2>"$s/user.err" &
user=$!
wait_for "the job registered" 10 test -e "$s/registered"
wait_for "the job listed" 10 show_has user '(.devices | length) == 2'
wait_for "the job counted on both GPUs while it uses neither" 5 counted 1 1
touch "$s/go"
wait_for "a context on GPU 1" 10 test -e "$s/context"
show_has user '.mem_used_bytes == 0' || fail "the context holds memory: $(gpushare-ctl show user)"
wait_for "the job counted on GPU 1 only" 5 counted 0 1
touch "$s/release"
wait_for "the context released" 10 test -e "$s/released"
wait_for "the job counted on both GPUs again" 5 counted 1 1
touch "$s/create"
wait_for "a context of its own on GPU 0" 10 test -e "$s/created"
wait_for "the job counted on GPU 0 only" 5 counted 1 0
touch "$s/destroy"
wait_for "the context destroyed" 10 test -e "$s/destroyed"
wait_for "the job counted on both GPUs once more" 5 counted 1 1
touch "$s/end"
wait "$user" || fail "the job failed: $(cat "$s/user.err")"
