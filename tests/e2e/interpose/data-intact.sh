#!/usr/bin/env bash
# A job that allocates up to its limit keeps its data intact: refusing the
# allocation over the limit touches nothing it already holds.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/interpose.inc"

client GPUSHARE_MEM_LIMIT=256MiB -- "$gs_client" --bind resolver \
  alloc 100MiB managed 100MiB async 50MiB fill alloc 10MiB managed 10MiB check
expect_grep '^fill result=0$' "$scratch/out"
expect_grep '^alloc bytes=10485760 result=2$' "$scratch/out"
expect_grep '^managed bytes=10485760 result=2$' "$scratch/out"
expect_grep '^check result=0 bytes=262144000 bad_words=0$' "$scratch/out"
