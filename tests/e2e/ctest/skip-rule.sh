#!/usr/bin/env bash
# The rule that turns an end-to-end script's exit into a CTest verdict
# (tests/cmake/e2e-test.cmake), applied to planted scripts in a project of
# their own: skip() (the marker and exit 77) is reported as skipped; a script
# that prints the marker and then fails is reported as failed, not hidden as
# a skip; one that prints the marker and exits 0 failed too (it skipped
# without telling CTest); a plain pass and a plain failure are what they are.
. "$(dirname "$0")/../common.inc"
command -v cmake >/dev/null && command -v ctest >/dev/null || fail "needs cmake and ctest"

project="$scratch/project"
mkdir -p "$project/scripts"
plant() {  # NAME BODY: a script that sources the real common.inc, then BODY
  printf '. "%s/common.inc"\n%s\n' "$e2e_dir" "$2" >"$project/scripts/$1.sh"
}
plant skips 'skip "planted: cannot run here"'
plant fails-after-marker 'echo "skipped: not really"; fail "planted failure"'
plant marker-exit-0 'echo "skipped: but exits 0"; exit 0'
plant marker-exit-3 'echo "skipped: nested"; exit 3'
plant passes 'echo "all good"'
plant fails 'fail "planted failure"'
cat >"$project/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.16)
project(skip_rule NONE)
enable_testing()
include($GPUSHARE_SOURCE_DIR/tests/cmake/e2e-test.cmake)
foreach(name skips fails-after-marker marker-exit-0 marker-exit-3 passes fails)
  gpushare_add_e2e_test(\${name} $project/scripts/\${name}.sh
    "GPUSHARE_PREFIX=$GPUSHARE_PREFIX;GPUSHARE_SOURCE_DIR=$GPUSHARE_SOURCE_DIR")
endforeach()
CMAKE
cmake -S "$project" -B "$project/build" >"$scratch/configure.log" 2>&1 ||
  fail "cannot configure the planted project: $(cat "$scratch/configure.log")"
ctest --test-dir "$project/build" --output-junit "$scratch/junit.xml" >"$scratch/ctest.log" 2>&1 &&
  fail "ctest passed although planted tests fail: $(cat "$scratch/ctest.log")"

verdict() {  # NAME: CTest's verdict on the planted test, from its JUnit report
  python3 - "$scratch/junit.xml" "$1" <<'PY'
import sys, xml.etree.ElementTree as tree
for case in tree.parse(sys.argv[1]).getroot().iter("testcase"):
    if case.get("name") == sys.argv[2]:
        print(case.get("status"))
PY
}
expect_verdict() {  # NAME VERDICT
  local got
  got=$(verdict "$1")
  [ "$got" = "$2" ] || fail "$1: CTest says '$got', expected '$2': $(cat "$scratch/ctest.log")"
}
expect_verdict skips notrun  # JUnit's word for a skip
expect_verdict fails-after-marker fail
expect_verdict marker-exit-0 fail
expect_verdict marker-exit-3 fail
expect_verdict passes run
expect_verdict fails fail

# CI's check (.ci/check-skips) lists the skip and fails unless it is allowed.
echo "# none" >"$scratch/none"
expect_exit 1 "$GPUSHARE_SOURCE_DIR/.ci/check-skips" "$scratch/junit.xml" "$scratch/none"
expect_grep '^skips: skipped: planted: cannot run here \(NOT ALLOWED\)$' "$scratch/out"
expect_grep 'skipped in CI, where they must run: skips ' "$scratch/err"
echo "skips   planted" >"$scratch/allowed"
expect_exit 0 "$GPUSHARE_SOURCE_DIR/.ci/check-skips" "$scratch/junit.xml" "$scratch/allowed"
expect_grep '^1 of 6 tests skipped, 0 not allowed to$' "$scratch/out"
