#!/usr/bin/env bash
# The managed-memory cost model: a kernel of a context whose managed memory
# is partly on the host runs (1 + s x host fraction) times longer (s = 4 by
# default); a prefetch occupies the stream for bytes / bandwidth (here
# GPUSHARE_SIM_MIGRATE_BANDWIDTH, which caps migrations below the copy
# path's GPUSHARE_SIM_PCIE_GBPS, plus its 5 us latency); data
# survives every move. Each events step runs after a 200 ms lead kernel, so
# the host's own delays (a loaded machine) do not fall between its events
# unless they exceed 200 ms; a migration takes 1 s, and its synchronisation
# must take at least 800 ms of it (the host's delay between the prefetch and
# the synchronisation is the difference).
. "$(dirname "$0")/../common.inc"
use_sim GPUSHARE_SIM_MEMORY=1GiB GPUSHARE_SIM_CTX_OVERHEAD=0
export GPUSHARE_SIM_MIGRATE_BANDWIDTH=256MiB
client="$libexec/tests/gpushare-cuda-client"
# elapsed: the events steps' times (each after a lead kernel, so exact).
elapsed() { jq -r 'select(.step=="events") | .elapsed_ms' "$scratch/out" | tr '\n' ' '; }

# All on the device, all on the host, back: 10, 50, 10 ms.
expect_exit 0 "$client" init ctx alloc:managed:256MiB fill:9 events:10000:200000 prefetch:host stream-sync \
  events:10000:200000 check:9 prefetch:device stream-sync events:10000:200000 check:9
[ "$(elapsed)" = "10 50 10 " ] || fail "kernel times $(elapsed), want 10 50 10"
# 256 MiB at 256 MiB/s: 1 s each way.
for sync in 1 2; do
  ms=$(jq -r 'select(.step=="stream-sync") | .wall_ms' "$scratch/out" | sed -n "${sync}p")
  awk -v ms="$ms" 'BEGIN { exit !(ms >= 800 && ms < 5000) }' ||
    fail "a 256 MiB migration took $ms ms, want 1000"
done

# 2 GiB managed on a 1 GiB device: half on the host, so 10 ms kernels take 30.
expect_exit 0 "$client" init ctx alloc:managed:2GiB events:10000:200000
[ "$(elapsed)" = "30 " ] || fail "half on the host: $(elapsed) ms, want 30"
GPUSHARE_SIM_MANAGED_SLOWDOWN=0 expect_exit 0 "$client" init ctx alloc:managed:2GiB events:10000:200000
[ "$(elapsed)" = "10 " ] || fail "with no slowdown: $(elapsed) ms, want 10"
