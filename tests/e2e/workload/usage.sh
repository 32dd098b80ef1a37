#!/usr/bin/env bash
# gpushare-workload follows the command-line conventions: --help on stdout
# ending with the man-page pointer, --version, usage errors with exit 2 and
# a "Try" line; every long option of --help is in its man page, which has
# the required sections.
. "$(dirname "$0")/../common.inc"
workload="$libexec/gpushare-workload"
[ -x "$workload" ] || fail "gpushare-workload is not installed in $libexec"
# A driver-API program: it starts only where a libcuda.so.1 is found.
use_sim
page="$GPUSHARE_SOURCE_DIR/man/gpushare-workload.1.scd"

expect_exit 0 "$workload" --help
[ "$(tail -n 1 "$scratch/out")" = "For more details see gpushare-workload(1)." ] ||
  fail "--help does not end with the man-page pointer"
grep -oE -- '--[a-z][a-z0-9-]+' "$scratch/out" | sort -u >"$scratch/options"
[ "$(wc -l <"$scratch/options")" -ge 10 ] || fail "--help lists too few options"
while read -r option; do
  grep -qF -- "*$option*" "$page" || fail "$option is not documented in $page"
done <"$scratch/options"
for section in "EXIT STATUS" ENVIRONMENT FILES EXAMPLES; do
  grep -q "^# $section" "$page" || fail "$page has no $section section"
done
for variable in GPUSHARE_SIM_STATE GPUSHARE_SIM_DEVICES GPUSHARE_SIM_MEMORY GPUSHARE_SIM_CTX_OVERHEAD \
  GPUSHARE_SIM_SMS GPUSHARE_SIM_MIGRATE_BANDWIDTH GPUSHARE_SIM_MANAGED_SLOWDOWN; do
  grep -q "^\*$variable\*" "$page" || fail "$variable is not documented in $page"
done
if command -v scdoc >/dev/null; then
  [ -s "$GPUSHARE_PREFIX/share/man/man1/gpushare-workload.1" ] || fail "gpushare-workload.1 is not installed"
fi

expect_exit 0 "$workload" --version
expect_grep '^gpushare-workload [0-9]+\.[0-9]+\.[0-9]+( \(commit [0-9a-f]+(-dirty)?\))?$' "$scratch/out"

for bad in "--no-such-option" "--iterations 0" "--alloc bogus" "--mem 12XB" "--grow -1" "--mem 0" "extra"; do
  # shellcheck disable=SC2086
  expect_exit 2 "$workload" $bad
  [ ! -s "$scratch/out" ] || fail "'$bad' wrote to stdout"
  expect_grep '^gpushare-workload: error: ' "$scratch/err"
  expect_grep "^Try 'gpushare-workload --help' for more information\.$" "$scratch/err"
done
expect_exit 2 "$workload" --mem 12XB
expect_grep "^gpushare-workload: error: --mem: .*12XB" "$scratch/err"
