#!/usr/bin/env bash
# The interposer survives fork: while four threads allocate and free (taking
# its locks), the program forks 30 times; every child reaches CUDA through
# the interposer and exits, none deadlocks on a lock held at fork time, and
# the child sees what the driver alone gives it (CUDA does not survive fork).
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"

"$gs_client" forks 30 >"$scratch/alone"
timeout 120 env LD_PRELOAD="$interposer" GPUSHARE_MEM_LIMIT=1GiB "$gs_client" forks 30 \
  >"$scratch/out" 2>"$scratch/err" || fail "forking under the interposer hung or failed: $(cat "$scratch/err")"
expect_grep '^forks count=30 exited=30 ' "$scratch/out"
[ "$(sed 's/.*exited=/exited=/' "$scratch/out")" = "$(sed 's/.*exited=/exited=/' "$scratch/alone")" ] ||
  fail "children behave differently under the interposer: $(cat "$scratch/out") vs $(cat "$scratch/alone")"
