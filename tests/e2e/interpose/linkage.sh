#!/usr/bin/env bash
# The interposer links nothing but libc, libdl and pthreads (no libstdc++,
# nothing the job's own C++ runtime could clash with), and exports only the
# driver's and NVML's names and dlsym under both glibc versions (and the
# driver handle its audit module asks for). The audit module, too, links
# only the C libraries and exports only the audit interface.
. "$(dirname "$0")/../common.inc"
so="$libexec/libgpushare-interpose.so"
[ -f "$so" ] || fail "$so is not installed"
command -v readelf >/dev/null || skip "readelf is not installed"

readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' >"$scratch/needed"
while read -r library; do
  case $library in
    libc.so.6 | libdl.so.2 | libpthread.so.0 | ld-linux-*.so.*) ;;
    *) fail "the interposer needs $library" ;;
  esac
done <"$scratch/needed"

nm -D --undefined-only "$so" >"$scratch/undefined"
if grep -E 'GLIBCXX|CXXABI|_Z' "$scratch/undefined"; then fail "the interposer uses libstdc++"; fi

# To a file first: `nm | grep -q` lets grep exit at its first match, and
# nm, killed by SIGPIPE on a long table, fails the pipeline (pipefail).
nm -D --defined-only "$so" >"$scratch/defined"
awk '{print $3}' "$scratch/defined" | sed 's/@.*//' | sort -u >"$scratch/exported"
while read -r symbol; do
  case $symbol in
    cu* | nvml* | dlsym | GLIBC_* | GPUSHARE_* | gpushare_interpose_driver) ;;
    *) fail "the interposer exports '$symbol'" ;;
  esac
done <"$scratch/exported"
grep -q ' dlsym@GLIBC_2.2.5$' "$scratch/defined" || fail "dlsym@GLIBC_2.2.5 is not exported"
grep -q ' dlsym@@GLIBC_2.34$' "$scratch/defined" || fail "dlsym@@GLIBC_2.34 is not exported"

audit="$libexec/libgpushare-audit.so"
[ -f "$audit" ] || fail "$audit is not installed"
readelf -d "$audit" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | while read -r library; do
  case $library in
    libc.so.6 | libdl.so.2 | ld-linux-*.so.*) ;;
    *) fail "the audit module needs $library" ;;
  esac
done
if nm -D --undefined-only "$audit" | grep -E 'GLIBCXX|CXXABI|_Z'; then fail "the audit module uses libstdc++"; fi
nm -D --defined-only "$audit" | awk '{print $3}' | sed 's/@.*//' | while read -r symbol; do
  case $symbol in
    la_* | GLIBC_*) ;;
    *) fail "the audit module exports '$symbol'" ;;
  esac
done
