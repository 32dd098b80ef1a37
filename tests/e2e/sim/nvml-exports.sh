#!/usr/bin/env bash
# The simulated libnvidia-ml.so.1 exports exactly NVML's public API: every
# function of the generated bindings of the whole API in Debian's
# librust-nvml-wrapper-sys-dev, plus lib/simgpu/nvml/names-newer.txt, read
# here independently of the build. Every exported name, resolved through
# dlsym and called with null arguments (before nvmlInit, after it, and with
# a real device handle first), returns; an unmodelled one returns
# NVML_ERROR_NOT_SUPPORTED and says so once on stderr.
. "$(dirname "$0")/../common.inc"
sim="$libexec/sim"
[ -f "$sim/libnvidia-ml.so.1" ] || skip "the simulated GPU is not installed"
command -v nm >/dev/null || skip "nm (binutils) is not installed"
bindings=$(ls /usr/share/cargo/registry/nvml-wrapper-sys-*/src/bindings.rs 2>/dev/null | sort | tail -1)
[ -n "$bindings" ] || skip "librust-nvml-wrapper-sys-dev is not installed"

{
  grep -o 'pub unsafe fn nvml[A-Za-z0-9_]*(' "$bindings" | sed 's/^pub unsafe fn //; s/($//'
  grep '^nvml' "$GPUSHARE_SOURCE_DIR/lib/simgpu/nvml/names-newer.txt"
} | sort -u >"$scratch/reference"
[ "$(wc -l <"$scratch/reference")" -gt 250 ] || fail "the reference lists too few NVML functions"
nm -D --defined-only "$sim/libnvidia-ml.so.1" | awk '{print $3}' | sort -u >"$scratch/exports"
comm -23 "$scratch/reference" "$scratch/exports" >"$scratch/missing"
[ ! -s "$scratch/missing" ] || { cat "$scratch/missing"; fail "NVML entry points missing from the simulator"; }
comm -13 "$scratch/reference" "$scratch/exports" >"$scratch/extra"
[ ! -s "$scratch/extra" ] || { cat "$scratch/extra"; fail "exports that are not NVML's API"; }

# Every name called with null arguments, three passes: nothing crashes.
export LD_LIBRARY_PATH="$sim"
expect_exit 0 "$libexec/tests/gpushare-nvml-nullcall" "$scratch/reference"
names=$(wc -l <"$scratch/reference")
[ "$(jq -s 'length' "$scratch/out")" = 3 ] || fail "the null-argument client did not finish its passes"
jq -e --argjson n "$names" -s 'all(.[]; .calls == $n)' "$scratch/out" >/dev/null ||
  fail "not every name was called"
# Unmodelled: NOT_SUPPORTED (3) in every pass, the same count each time.
unmodelled=$(grep -c 'is not modelled by the simulated NVML (NVML_ERROR_NOT_SUPPORTED)' "$scratch/err")
[ "$unmodelled" -gt 100 ] || fail "only $unmodelled unmodelled names logged"
jq -e --argjson u "$unmodelled" -s 'all(.[]; .results["3"] == $u)' "$scratch/out" >/dev/null ||
  { cat "$scratch/out"; fail "unmodelled entry points did not all return NVML_ERROR_NOT_SUPPORTED"; }
# Once per name, whatever the number of calls, and only names of the API.
sed -n 's/.*note: \(nvml[A-Za-z0-9_]*\) is not modelled.*/\1/p' "$scratch/err" | sort >"$scratch/logged"
[ "$(sort -u "$scratch/logged" | wc -l)" = "$unmodelled" ] || fail "an unmodelled name was logged twice"
[ -z "$(comm -23 "$scratch/logged" "$scratch/reference")" ] || fail "logged a name outside the API"
# The modelled ones are not among them.
for modelled in nvmlDeviceGetProcessUtilization nvmlDeviceGetMemoryInfo_v2 nvmlDeviceGetPciInfo_v3 \
  nvmlDeviceGetComputeRunningProcesses_v2 nvmlDeviceGetMigMode nvmlDeviceGetSamples; do
  ! grep -qx "$modelled" "$scratch/logged" || fail "$modelled is reported as not modelled"
done
