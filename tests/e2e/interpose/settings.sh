#!/usr/bin/env bash
# Bad settings fail loudly at CUDA initialisation, never by running
# unlimited; GPUSHARE_DISABLE=1 passes everything through; GPUSHARE_LOG
# controls the log, prefixed gpushare[PID].
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"

for bad in 8XB -1 0 150% ""; do
  status=0
  env LD_PRELOAD="$interposer" GPUSHARE_MEM_LIMIT="$bad" "$gs_client" alloc 1MiB \
    >"$scratch/out" 2>"$scratch/err" || status=$?
  [ "$status" -eq 2 ] || fail "GPUSHARE_MEM_LIMIT='$bad': the client ran (status $status)"
  expect_grep '^init result=1$' "$scratch/out"
  expect_grep "^gpushare\[[0-9]+\]: error: invalid GPUSHARE_MEM_LIMIT: '$bad'.*CUDA initialisation refused" "$scratch/err"
done
status=0
env LD_PRELOAD="$interposer" GPUSHARE_QOS=fast "$gs_client" alloc 1MiB >"$scratch/out" 2>"$scratch/err" || status=$?
[ "$status" -eq 2 ] || fail "an invalid GPUSHARE_QOS did not stop CUDA"
expect_grep "invalid GPUSHARE_QOS 'fast'" "$scratch/err"

# The kill switch: no limit, no log, even with bad settings.
client GPUSHARE_DISABLE=1 GPUSHARE_MEM_LIMIT=1GiB GPUSHARE_LOG=debug -- "$gs_client" --bind resolver alloc 2GiB
expect_grep '^alloc bytes=2147483648 result=0$' "$scratch/out"
if grep -q gpushare "$scratch/err"; then fail "GPUSHARE_DISABLE=1 still logged"; fi

# Logging: silent by default, each refused allocation at info and debug.
client GPUSHARE_MEM_LIMIT=1GiB -- "$gs_client" alloc 2GiB
if [ -s "$scratch/err" ]; then fail "the interposer logged at the default level: $(cat "$scratch/err")"; fi
client GPUSHARE_MEM_LIMIT=1GiB GPUSHARE_LOG=info -- "$gs_client" alloc 2GiB
expect_grep "^gpushare\[[0-9]+\]: cuMemAlloc_v2\(2147483648 bytes\) refused on device 0: holds 0 of 1073741824 bytes$" "$scratch/err"
if grep -q 'dlsym(' "$scratch/err"; then fail "info level logged debug lines"; fi
