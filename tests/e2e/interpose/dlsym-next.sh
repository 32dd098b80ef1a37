#!/usr/bin/env bash
# The interposer's dlsym passes lookups it does not answer on to glibc as a
# tail call, so dlsym(RTLD_NEXT, ...) in another library still finds the
# next definition after *that* library, not after the interposer.
. "$(dirname "$0")/../common.inc"
program="$libexec/tests/gs-dlsym-next"
[ -x "$program" ] || skip "gs-dlsym-next is not installed"

[ "$("$program")" = "next=2" ] || fail "control run: RTLD_NEXT broken without the interposer"
[ "$(LD_PRELOAD="$libexec/libgpushare-interpose.so" "$program")" = "next=2" ] ||
  fail "RTLD_NEXT through the interposer's dlsym found the wrong definition"
# The same with the audit module gpushare-run sets (LD_AUDIT).
[ "$(LD_AUDIT="$libexec/libgpushare-audit.so" LD_PRELOAD="$libexec/libgpushare-interpose.so" \
  "$program")" = "next=2" ] || fail "RTLD_NEXT under the audit module found the wrong definition"
