#!/usr/bin/env bash
# The simulated libcuda.so.1 exports exactly the CUDA 13 driver's entry
# points (the toolkit stub's list) plus its gpushare_sim_* introspection,
# depends on nothing but libc, and an entry point it does not implement
# returns CUDA_ERROR_NOT_SUPPORTED and says so once on stderr.
. "$(dirname "$0")/../common.inc"
sim="$libexec/sim"
[ -f "$sim/libcuda.so.1" ] || skip "the simulated GPU is not installed"
command -v nm >/dev/null || skip "nm (binutils) is not installed"
stub=$(find /usr/local/cuda/lib64/stubs /usr/local/cuda/targets/*/lib/stubs -name libcuda.so 2>/dev/null | head -1)
[ -n "$stub" ] || skip "the CUDA toolkit's stub libcuda.so is not here"

nm -D --defined-only "$stub" | awk '{print $3}' | sort -u >"$scratch/stub"
nm -D --defined-only "$sim/libcuda.so.1" | awk '{print $3}' | sort -u >"$scratch/sim"
[ "$(wc -l <"$scratch/stub")" -gt 600 ] || fail "the stub lists too few symbols"
comm -23 "$scratch/stub" "$scratch/sim" >"$scratch/missing"
[ ! -s "$scratch/missing" ] || { cat "$scratch/missing"; fail "entry points missing from the simulator"; }
comm -13 "$scratch/stub" "$scratch/sim" >"$scratch/extra"
introspection=(gpushare_sim_checkpoint_ns gpushare_sim_device_stats gpushare_sim_hold_driver_lock
  gpushare_sim_last_error gpushare_sim_link_stats gpushare_sim_managed_stats gpushare_sim_state_path)
[ "$(cat "$scratch/extra")" = "$(printf '%s\n' "${introspection[@]}")" ] ||
  { cat "$scratch/extra"; fail "unexpected exports"; }
nm -D --defined-only "$sim/libnvidia-ml.so.1" | awk '{print $3}' | grep -v '^nvml' && fail "NVML exports non-NVML names"

# Only libc and the loader: no libstdc++ in processes that load us.
for library in libcuda.so.1 libnvidia-ml.so.1; do
  needed=$(readelf -d "$sim/$library" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | grep -v '^ld-linux' |
    tr '\n' ' ')
  [ "$needed" = "libc.so.6 " ] || fail "$library needs: $needed"
  readelf -d "$sim/$library" | grep -q "SONAME.*\[$library\]" || fail "$library has the wrong SONAME"
done
readelf -d "$sim/libcuda.so.1" | grep -q 'FLAGS.*SYMBOLIC' || fail "libcuda.so.1 is not linked -Bsymbolic"

# An unimplemented entry point: 801 each time, one line on stderr.
export LD_LIBRARY_PATH="$sim"
expect_exit 0 "$libexec/tests/gpushare-cuda-client" init ?stub:cuGraphCreate ?stub:cuGraphCreate \
  ?stub:cuGraphCreate
[ "$(jq -r 'select(.step=="stub") | .result' "$scratch/out" | sort -u)" = CUDA_ERROR_NOT_SUPPORTED ] ||
  fail "cuGraphCreate did not return CUDA_ERROR_NOT_SUPPORTED"
[ "$(grep -c 'cuGraphCreate is not implemented by the simulated driver' "$scratch/err")" = 1 ] ||
  { cat "$scratch/err"; fail "expected one line naming cuGraphCreate on stderr"; }
