#!/usr/bin/env bash
# gpushare-place against hostile input: binary garbage and terminal escapes
# in the cluster file and the job stream never reach the terminal raw, a
# newline in a job id cannot split --format slurm output, and resident jobs
# whose memory sums past 2^64 cannot make a full GPU look empty.
. "$(dirname "$0")/../common.inc"

# printable FILE: only printable ASCII and newlines (the inputs below hold
# no other UTF-8, so any other byte came through raw).
printable() {
  local raw
  raw=$(tr -d '\n -~' <"$1" | wc -c)
  [ "$raw" -eq 0 ] || { od -c "$1" | head -20; fail "$1 holds $raw raw control or non-UTF-8 bytes"; }
}

# 1. A cluster file with escapes and binary bytes in a string and a value.
printf '[[tenant]]\nname = "t\033[31m"\nquota_gpus = \033]0;owned\007\377\376\n' >garbage.toml
expect_exit 2 gpushare-place -c garbage.toml </dev/null
printable "$scratch/err"
expect_grep '^gpushare-place: error: garbage.toml:2:' "$scratch/err"
expect_grep '\\x1b\[31m' "$scratch/err"

# A TOML escape smuggles a newline into a node name: refused, with where.
printf '[[node]]\nname = "n1\\nn2"\n' >newline.toml
expect_exit 2 gpushare-place -c newline.toml </dev/null
expect_grep "^gpushare-place: error: newline.toml:2:8: 'name' must not contain control characters \(U\+000A at byte 3\)$" "$scratch/err"

# 2. Job records with bytes that are not UTF-8 and an escape.
cat >cluster.toml <<'TOML'
[[tenant]]
name = "t"
quota_gpus = 4

[[node]]
name = "n1"
[[node.gpu]]
index = 0
mem = "80GiB"
TOML
printf '{"id":"a\377\033[2J"}\n\033[31m\n' >garbage.jsonl
expect_exit 2 gpushare-place -c cluster.toml --jobs garbage.jsonl
printable "$scratch/err"
[ "$(wc -l <"$scratch/out")" -eq 2 ] || fail "expected two unplaced records"

# 3. A newline in a job id (a JSON escape) would split a slurm line into a
# second command; the record is refused and its line stays one line.
printf '%s\n' '{"id":"ok","tenant":"t"}' '{"id":"evil\nsrun --uid=0 sh","tenant":"t"}' \
  '{"id":"ok2","tenant":"t"}' >ids.jsonl
expect_exit 2 gpushare-place -c cluster.toml -f slurm --jobs ids.jsonl
[ "$(wc -l <"$scratch/out")" -eq 3 ] || { cat "$scratch/out"; fail "slurm output is not one line per record"; }
if grep -q -- '--uid' "$scratch/out"; then fail "the id reached the slurm output"; fi
expect_grep "^gpushare-place: error: ids.jsonl: record 2: 'id' must not contain control characters \(U\+000A at byte 5\)" "$scratch/err"

# 4. Resident jobs of 2^63-1, 2^63-1 and 2 bytes: wrapped, the GPU's used
# total would be 0 and an 8GiB job would be placed on the full GPU.
cat >wrap.toml <<'TOML'
[[tenant]]
name = "t"
quota_gpus = 4

[[node]]
name = "n1"
[[node.gpu]]
index = 0
mem = "80GiB"
[[node.gpu.job]]
id = "a"
class = "opportunistic"
tenant = "t"
mem_bytes = 9223372036854775807
[[node.gpu.job]]
id = "b"
class = "opportunistic"
tenant = "t"
mem_bytes = 9223372036854775807
[[node.gpu.job]]
id = "c"
class = "opportunistic"
tenant = "t"
mem_bytes = 2
TOML
echo '{"id":"x","tenant":"t","class":"opportunistic","mem_bytes":8589934592}' >big.jsonl
expect_exit 0 gpushare-place -c wrap.toml --jobs big.jsonl
[ "$(jq -r .status "$scratch/out")" = unplaced ] || { cat "$scratch/out"; fail "placed on a full GPU"; }
