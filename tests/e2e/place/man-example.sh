#!/usr/bin/env bash
# The example cluster in gpushare-place(1) is valid, and its example
# pipeline places both jobs.
. "$(dirname "$0")/../common.inc"
page="$GPUSHARE_SOURCE_DIR/man/gpushare-place.1.scd"

# The first code block after "A complete cluster file".
awk '/^A complete cluster file/ {found=1} found && /^```$/ {if (inside) exit; inside=1; next}
     inside {print}' "$page" >cluster.toml
grep -q '^\[\[node.gpu\]\]$' cluster.toml || fail "no example cluster found in $page"

printf '%s\n' \
  '{"kind":"job","id":"resnet","tenant":"vision","gpus":2,"class":"auto"}' \
  '{"kind":"job","id":"sweep","tenant":"vision","mem_bytes":4294967296,"class":"opportunistic"}' |
  gpushare-place -c cluster.toml --explain >"$scratch/placed"
jq -e -s '[.[].status] == ["placed", "placed"]' "$scratch/placed" >/dev/null ||
  fail "the man page example does not place both jobs: $(cat "$scratch/placed")"
jq -e -s '.[0].node == "n2" and .[0].gpus == [0, 1]' "$scratch/placed" >/dev/null ||
  fail "resnet is not where the page's rules put it"
