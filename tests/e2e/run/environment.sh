#!/usr/bin/env bash
# gpushare-run execs the command with the interposer first on LD_PRELOAD
# (keeping what was there) and its settings in GPUSHARE_* variables.
. "$(dirname "$0")/../common.inc"

show_env() { gpushare-run "$@" sh -c 'env' | grep -E '^(LD_PRELOAD|LD_LIBRARY_PATH|GPUSHARE_[A-Z_]+|CUDA_VISIBLE_DEVICES)=' | grep -v -E '^GPUSHARE_(SIM_STATE|SOCKET)=' | sort; }

show_env >"$scratch/plain"
expect_grep "^LD_PRELOAD=$libexec/libgpushare-interpose.so$" "$scratch/plain"
expect_grep "^GPUSHARE_QOS=production$" "$scratch/plain"
expect_grep "^GPUSHARE_JOB=sh$" "$scratch/plain"
if grep -q GPUSHARE_MEM_LIMIT "$scratch/plain"; then fail "a limit was set without --mem-limit"; fi

# Two simulated devices: gpushare-run checks that GPU 1 exists before exec.
GPUSHARE_SIM_DEVICES=2 LD_PRELOAD=/lib/x86_64-linux-gnu/libc.so.6 show_env --opportunistic --mem-limit 1.5GiB \
  --name trainer --gpu 1 -p log=debug --sim >"$scratch/full"
expect_grep "^LD_PRELOAD=$libexec/libgpushare-interpose.so:/lib/x86_64-linux-gnu/libc.so.6$" "$scratch/full"
expect_grep "^LD_LIBRARY_PATH=$libexec/sim" "$scratch/full"
expect_grep "^GPUSHARE_QOS=opportunistic$" "$scratch/full"
expect_grep "^GPUSHARE_MEM_LIMIT=1610612736$" "$scratch/full"
expect_grep "^GPUSHARE_JOB=trainer$" "$scratch/full"
expect_grep "^CUDA_VISIBLE_DEVICES=1$" "$scratch/full"
expect_grep "^GPUSHARE_LOG=debug$" "$scratch/full"

# exec, not fork: the command has gpushare-run's pid.
pid_file="$scratch/pid"
gpushare-run sh -c 'echo $$ > "$1"' sh "$pid_file" &
wait_pid=$!
wait "$wait_pid"
[ "$(cat "$pid_file")" = "$wait_pid" ] || fail "the command did not keep gpushare-run's pid"
