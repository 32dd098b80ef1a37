#!/usr/bin/env bash
# gpushare-ctl tree-file makes a job's tree file for another user (the Slurm
# Prolog's): a new file, owned as asked, private to its owner; never over
# an existing file or through a link; a malformed --owner is a usage error.
. "$(dirname "$0")/../common.inc"

# For another user (root only: elsewhere, for the caller).
owner=$(id -u):$(id -g)
[ "$(id -u)" -eq 0 ] && owner=65534:65534
expect_exit 0 gpushare-ctl tree-file "$scratch/job.tree" --owner "$owner"
[ ! -s "$scratch/out" ] || fail "tree-file printed: $(cat "$scratch/out")"
[ "$(stat -c '%u:%g %a %F' "$scratch/job.tree")" = "$owner 600 regular file" ] ||
  fail "the tree file is $(stat -c '%u:%g %a %F' "$scratch/job.tree")"
# Sized as a tree file, stamped with the magic "GTRE" the interposer checks.
[ "$(head -c 4 "$scratch/job.tree")" = GTRE ] || fail "no tree file magic: $(head -c 16 "$scratch/job.tree" | od -c)"
expect_exit 0 gpushare-ctl tree-file "$scratch/mine.tree"
[ "$(stat -c '%u %a' "$scratch/mine.tree")" = "$(id -u) 600" ] || fail "default owner: $(stat -c '%u %a' "$scratch/mine.tree")"
[ "$(stat -c %s "$scratch/mine.tree")" = "$(stat -c %s "$scratch/job.tree")" ] || fail "tree files of two sizes"

# Never over an existing file, never through a link (the target stays).
expect_exit 1 gpushare-ctl tree-file "$scratch/job.tree"
expect_grep "^gpushare-ctl: error: cannot create the tree file $scratch/job.tree: File exists" "$scratch/err"
echo keep >"$scratch/target"
ln -s "$scratch/target" "$scratch/link.tree"
expect_exit 1 gpushare-ctl tree-file "$scratch/link.tree"
[ "$(cat "$scratch/target")" = keep ] || fail "tree-file wrote through a link"
expect_exit 1 gpushare-ctl tree-file "$scratch/no/such/dir/job.tree"
[ ! -e "$scratch/no" ] || fail "a directory was made"

for bad in abc 1:x 1: :1 1:2:3; do
  expect_exit 2 gpushare-ctl tree-file "$scratch/bad.tree" --owner "$bad"
  expect_grep "^gpushare-ctl: error: --owner '$bad': expected UID or UID:GID" "$scratch/err"
done
[ ! -e "$scratch/bad.tree" ] || fail "a malformed --owner made a file"
echo ok
