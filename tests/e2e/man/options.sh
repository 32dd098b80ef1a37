#!/usr/bin/env bash
# Every long option that --help prints (the program's and each verb's)
# appears in the program's man page source, and the man pages install.
. "$(dirname "$0")/../common.inc"

check_options() {  # PAGE_SOURCE HELP_ARGS...
  local page=$1; shift
  "$@" --help >"$scratch/help"
  grep -oE -- '--[a-z][a-z0-9-]+' "$scratch/help" | sort -u >"$scratch/options"
  [ -s "$scratch/options" ] || fail "'$* --help' printed no long options"
  while read -r option; do
    grep -qF -- "*$option*" "$page" || fail "$option (from '$* --help') is not in $page"
  done <"$scratch/options"
}

for prog in gpushare-run gpushare-ctl gpushare-probe gpushare-place; do
  page="$GPUSHARE_SOURCE_DIR/man/$prog.1.scd"
  [ -f "$page" ] || fail "no man page source $page"
  check_options "$page" "$prog"
  for verb in $("$prog" --help | awk '/^Subcommands:/ {on=1; next} on && NF {print $1}'); do
    check_options "$page" "$prog" "$verb"
  done
  for section in "EXIT STATUS" ENVIRONMENT FILES EXAMPLES; do
    grep -q "^# $section" "$page" || fail "$page has no $section section"
  done
done

if command -v scdoc >/dev/null; then
  for prog in gpushare-run gpushare-ctl gpushare-probe gpushare-place; do
    [ -s "$GPUSHARE_PREFIX/share/man/man1/$prog.1" ] || fail "$prog.1 is not installed"
    if command -v mandoc >/dev/null; then
      mandoc -T lint -W warning "$GPUSHARE_PREFIX/share/man/man1/$prog.1" >"$scratch/lint" 2>&1 || true
      # scdoc's output is accepted by man(1); only errors matter here.
      if grep -E "ERROR|UNSUPP" "$scratch/lint"; then fail "mandoc lint errors in $prog.1"; fi
    fi
  done
fi
