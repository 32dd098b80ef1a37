#!/usr/bin/env bash
# Every program's --version names the version and, built from a git
# checkout, the commit it was built from: "PROG 0.1.0 (commit HASH)", HASH a
# commit of the source repository ("-dirty" when tracked files differed).
# The generator behind it (lib/common/build_commit.cmake, run at every
# build) names a new commit after a new commit, rewrites its header only
# when the text changes, names nothing outside a checkout or without git,
# and never a repository the sources merely sit inside.
. "$(dirname "$0")/../common.inc"
command -v git >/dev/null || skip "git is not installed"
command -v cmake >/dev/null || skip "cmake is not installed"
git -C "$GPUSHARE_SOURCE_DIR" rev-parse --git-dir >/dev/null 2>&1 ||
  skip "the sources are not a git checkout"

for prog in gpushare-run gpushare-ctl gpushare-probe gpushare-place gpushare-workload; do
  path=$prog
  if [ "$prog" = gpushare-workload ]; then
    # A driver-API program: it starts only where a libcuda.so.1 is found.
    path="env LD_LIBRARY_PATH=$libexec/sim $libexec/gpushare-workload"
  fi
  # shellcheck disable=SC2086
  expect_exit 0 $path --version
  expect_grep "^$prog [0-9]+\.[0-9]+\.[0-9]+ \(commit [0-9a-f]{12}(-dirty)?\)$" "$scratch/out"
  commit=$(sed -E 's/.*\(commit ([0-9a-f]+).*/\1/' "$scratch/out")
  git -C "$GPUSHARE_SOURCE_DIR" cat-file -e "$commit^{commit}" 2>/dev/null ||
    fail "$prog names $commit, not a commit of $GPUSHARE_SOURCE_DIR"
done

# The generator, on a repository of its own.
generate() {  # SOURCE-DIR [GIT]: prints the commit the header names
  cmake -DSOURCE_DIR="$1" -DOUTPUT="$scratch/header.h" -DGIT="${2-$(command -v git)}" \
    -P "$GPUSHARE_SOURCE_DIR/lib/common/build_commit.cmake"
  sed -nE 's/^#define GPUSHARE_BUILD_COMMIT "(.*)"$/\1/p' "$scratch/header.h"
}
repo="$scratch/repo"
mkdir -p "$repo/src"
git -C "$repo" init -q
git -C "$repo" config user.email test@example.invalid
git -C "$repo" config user.name test
echo one >"$repo/src/file"
git -C "$repo" add src/file
git -C "$repo" commit -q -m one
first=$(git -C "$repo" rev-parse --short=12 HEAD)
[ "$(generate "$repo")" = "$first" ] || fail "the first commit is not named: $(generate "$repo")"

# Nothing changed: the header is left alone (nothing recompiles).
touch -d '2001-01-01' "$scratch/header.h"
[ "$(generate "$repo")" = "$first" ] || fail "the same commit changed its name"
[ "$(stat -c %Y "$scratch/header.h")" = "$(date -d '2001-01-01' +%s)" ] ||
  fail "the header was rewritten although its text did not change"

# A tracked change makes it dirty; an untracked file (a build tree) does not.
echo untracked >"$repo/notes"
[ "$(generate "$repo")" = "$first" ] || fail "an untracked file made the build dirty"
echo two >"$repo/src/file"
[ "$(generate "$repo")" = "$first-dirty" ] || fail "a changed file is not -dirty: $(generate "$repo")"

# A new commit: the next build names it (a configure-time value would not).
git -C "$repo" commit -q -a -m two
second=$(git -C "$repo" rev-parse --short=12 HEAD)
[ "$second" != "$first" ] || fail "the test's two commits have one name"
[ "$(generate "$repo")" = "$second" ] || fail "the new commit is not named: $(generate "$repo")"

# Sources inside another repository, not a checkout themselves: no commit.
[ -z "$(generate "$repo/src")" ] || fail "sources inside a repository claimed its commit"
# Not a repository at all, and no git program: no commit, no failure.
mkdir -p "$scratch/plain"
[ -z "$(generate "$scratch/plain")" ] || fail "a directory outside git named a commit"
[ -z "$(generate "$repo" "")" ] || fail "without git a commit was named"
[ -z "$(generate "$repo" "$scratch/no-such-git")" ] || fail "a missing git named a commit"
