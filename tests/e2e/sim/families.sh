#!/usr/bin/env bash
# Every allocation family counts against the device's capacity: plain,
# pitched, stream-ordered (default pool and an explicit one), VMM and
# managed memory; pinned host memory does not. Pools keep freed bytes until
# a synchronisation; managed memory gives way to other allocations by
# moving to the host, data intact.
. "$(dirname "$0")/../common.inc"
use_sim GPUSHARE_SIM_MEMORY=4GiB GPUSHARE_SIM_CTX_OVERHEAD=0
client="$libexec/tests/gpushare-cuda-client"
wait_file() { for _ in $(seq 600); do [ -e "$1" ] && return 0; sleep 0.05; done; fail "timed out waiting for $1"; }
# free_after N: free_bytes of the Nth info step.
free_after() { jq -r 'select(.step=="info") | .free_bytes' "$scratch/out" | sed -n "$1p"; }
GiB=$((1 << 30))

for family in plain pitch async pool vmm; do
  expect_exit 0 "$client" init ctx alloc:$family:3GiB info ?alloc:plain:2GiB free info sync info
  [ "$(free_after 1)" = $((1 * GiB)) ] || fail "$family: 3 GiB did not count ($(free_after 1) free)"
  expect_grep '"step":"alloc","result":"CUDA_ERROR_OUT_OF_MEMORY","kind":"plain"' "$scratch/out"
  case $family in
    async | pool) want=$((1 * GiB)) ;;  # freed, but kept by the pool until a synchronisation
    *) want=$((4 * GiB)) ;;
  esac
  [ "$(free_after 2)" = "$want" ] || fail "$family: after the free, $(free_after 2) free, want $want"
  [ "$(free_after 3)" = $((4 * GiB)) ] || fail "$family: after a synchronisation, $(free_after 3) free"
done

# Pinned host memory is not device memory.
expect_exit 0 "$client" init ctx alloc:host:3GiB info
[ "$(free_after 1)" = $((4 * GiB)) ] || fail "host memory counted against the device"

# Managed: on the device as far as it fits; attached to the host, not at all
# until prefetched.
expect_exit 0 "$client" init ctx alloc:managed-host:3GiB info prefetch:device info prefetch:host info
[ "$(free_after 1) $(free_after 2) $(free_after 3)" = "$((4 * GiB)) $((1 * GiB)) $((4 * GiB))" ] ||
  fail "managed residency: $(free_after 1) $(free_after 2) $(free_after 3) free"

# Another process's plain allocation evicts managed memory instead of failing.
"$client" init ctx alloc:managed:3GiB fill:5 info ready:"$scratch/ready" wait:"$scratch/go" info check:5 \
  >"$scratch/holder.out" &
wait_file "$scratch/ready"
expect_exit 0 "$client" init ctx alloc:plain:2GiB info nvml ?alloc:plain:3GiB
[ "$(free_after 1)" = 0 ] || fail "plain 2 GiB next to 3 GiB managed: $(free_after 1) free"
expect_grep '"step":"alloc","result":"CUDA_ERROR_OUT_OF_MEMORY","kind":"plain","bytes":3221225472' "$scratch/out"
touch "$scratch/go"
wait || fail "the managed holder failed: $(cat "$scratch/holder.out")"
expect_grep '"step":"check","result":"CUDA_SUCCESS"' "$scratch/holder.out"
