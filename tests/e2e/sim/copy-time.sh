#!/usr/bin/env bash
# The copy path: a copy takes GPUSHARE_SIM_PCIE_LATENCY_US plus bytes at
# GPUSHARE_SIM_PCIE_GBPS (within one device, at GPUSHARE_SIM_DTOD_GBPS);
# asynchronous copies are ordered in their stream with kernels; synchronous
# ones block until done; transfers in one direction of one device queue,
# other devices' do not. Events steps run after a lead kernel long enough to
# cover the host's own copying of the bytes, so their figures are the
# model's (exact); wall-clock figures get generous margins.
. "$(dirname "$0")/../common.inc"
use_sim GPUSHARE_SIM_MEMORY=4GiB GPUSHARE_SIM_CTX_OVERHEAD=0
client="$libexec/tests/gpushare-cuda-client"
# value STEP FIELD [N]: FIELD of the Nth STEP line of the last run.
value() { jq -r "select(.step==\"$1\") | .$2" "$scratch/out" | sed -n "${3:-1}p"; }
within() { awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v >= lo && v <= hi) }'; }

# 1 GiB host to device at the default 51 GB/s: 1073741824 / 51e9 s + 5 us =
# 21.06 ms. (The memset touches the device memory first, so that the host's
# copy of the bytes, during the 3 s lead kernel, is quick even when loaded.)
expect_exit 0 "$client" init ctx stream alloc:plain:1GiB memset:0 launch:1:3000000 mark \
  copy:htod:1GiB:async elapsed
ms=$(value elapsed elapsed_ms)
within "$ms" 21.0 21.1 || fail "1 GiB HtoD took $ms ms, want 21.06"

# Back, and within the device (800 GB/s): 256 MiB take 5.27 and 0.34 ms.
expect_exit 0 "$client" init ctx stream alloc:plain:512MiB memset:0 launch:1:2000000 mark \
  copy:dtoh:256MiB:async elapsed launch:1:2000000 mark copy:dtod:256MiB:async elapsed
ms=$(value elapsed elapsed_ms 1)
within "$ms" 5.22 5.32 || fail "256 MiB DtoH took $ms ms, want 5.27"
ms=$(value elapsed elapsed_ms 2)
within "$ms" 0.3 0.4 || fail "256 MiB DtoD took $ms ms, want 0.34"

# The latency: a 4-byte copy with 20 ms of it.
GPUSHARE_SIM_PCIE_LATENCY_US=20000 expect_exit 0 "$client" init ctx stream alloc:plain:1MiB \
  launch:1:200000 mark copy:htod:4:async elapsed
ms=$(value elapsed elapsed_ms)
within "$ms" 19.9 20.1 || fail "a 4-byte copy with 20 ms latency took $ms ms"

# In stream order with kernels, at 1 GB/s: 10 ms, 64 MiB (67.11 ms), 10 ms.
export GPUSHARE_SIM_PCIE_GBPS=1
expect_exit 0 "$client" init ctx stream alloc:plain:64MiB memset:0 launch:1:500000 mark launch:1:10000 \
  copy:htod:64MiB:async launch:1:10000 elapsed
ms=$(value elapsed elapsed_ms)
within "$ms" 87.0 87.3 || fail "kernel, copy, kernel took $ms ms, want 87.11"

# A synchronous copy waits for the kernels before it, then for its transfer.
expect_exit 0 "$client" init ctx stream alloc:plain:256MiB launch:1:300000 copy:htod:4:sync \
  copy:htod:256MiB:sync
ms=$(value copy wall_ms 1)
within "$ms" 290 5000 || fail "a copy after a 300 ms kernel returned after $ms ms"
ms=$(value copy wall_ms 2)
within "$ms" 265 5000 || fail "a 256 MiB copy at 1 GB/s returned after $ms ms, want 268"

# Two processes copying to one device share its link: the second waits for
# the first (2 x 268 ms); a process copying to another device does not.
# (64 MiB at 0.25 GB/s, into memory touched beforehand, so that the host's
# own copying stays well below the modelled time.)
export GPUSHARE_SIM_DEVICES=2 GPUSHARE_SIM_PCIE_GBPS=0.25
run_copier() { # NAME DEVICE
  "$client" init ctx:"$2" alloc:plain:64MiB memset:1 ready:"$scratch/ready-$1" \
    wait:"$scratch/go" copy:htod:64MiB:sync >"$scratch/out-$1" 2>"$scratch/err-$1"
}
run_copier a 0 & a=$!
run_copier b 0 & b=$!
run_copier c 1 & c=$!
for name in a b c; do
  for _ in $(seq 600); do [ -e "$scratch/ready-$name" ] && break; sleep 0.1; done
done
touch "$scratch/go"
wait "$a" || fail "copier a failed: $(cat "$scratch/err-a")"
wait "$b" || fail "copier b failed: $(cat "$scratch/err-b")"
wait "$c" || fail "copier c failed: $(cat "$scratch/err-c")"
wall() { jq -r 'select(.step=="copy") | .wall_ms' "$scratch/out-$1"; }
slower=$(printf '%s\n%s\n' "$(wall a)" "$(wall b)" | sort -g | tail -1)
within "$slower" 480 10000 || fail "two copies on one link: the later returned after $slower ms"
within "$(wall c)" 260 480 || fail "a copy to another device took $(wall c) ms, want 268"

# Settings are checked.
GPUSHARE_SIM_PCIE_GBPS=0 expect_exit 1 "$client" init
expect_grep "GPUSHARE_SIM_PCIE_GBPS" "$scratch/err"
GPUSHARE_SIM_PCIE_LATENCY_US=fast expect_exit 1 "$client" init
expect_grep "GPUSHARE_SIM_PCIE_LATENCY_US" "$scratch/err"
GPUSHARE_SIM_EVICT=maybe expect_exit 1 "$client" init
expect_grep "GPUSHARE_SIM_EVICT: 'maybe' is neither 'on' nor 'off'" "$scratch/err"
