#!/usr/bin/env bash
# The coordinator client archive may need only libc, libdl and pthreads:
# no undefined C++ runtime symbols (std::, operator new/delete, exceptions,
# RTTI, static-init guards).
set -euo pipefail
archive=$1
undefined=$(nm -u "$archive" | awk '{print $2}' | sort -u)
bad=$(grep -E '^(_ZNS|_ZSt|_ZNK?St|_Znw|_Zna|_Zdl|_Zda|__cxa_|__gxx_personality|_ZTI|_ZTV|_Unwind)' \
  <<<"$undefined" || true)
if [ -n "$bad" ]; then
  echo "client library needs C++ runtime symbols:" >&2
  echo "$bad" >&2
  exit 1
fi
echo "ok: $(wc -l <<<"$undefined") undefined symbols, none from the C++ runtime"
