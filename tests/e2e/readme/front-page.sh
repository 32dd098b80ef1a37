#!/usr/bin/env bash
# The README stays a front page: at most 250 lines, and every cell of its
# tables one short line (at most 200 characters); the details belong in
# docs/. The check fires, naming the line, on a copy with a cell grown into
# a paragraph and on a copy grown past 250 lines.
. "$(dirname "$0")/../common.inc"

# front_page FILE: prints FILE:LINE: why for each breach; exit 1 if any.
front_page() {
  awk -v file="$(basename "$1")" '
    /^\|/ {
      n = split($0, cell, "|")
      for (i = 2; i < n; i++) {
        if (length(cell[i]) > 200) {
          printf "%s:%d: a table cell of %d characters (at most 200)\n", file, NR, length(cell[i])
          bad = 1
        }
      }
    }
    END {
      if (NR > 250) { printf "%s: %d lines (at most 250)\n", file, NR; bad = 1 }
      exit bad
    }' "$1"
}

readme="$GPUSHARE_SOURCE_DIR/README.md"
expect_exit 0 front_page "$readme"
[ ! -s "$scratch/out" ] || fail "the README is no front page: $(cat "$scratch/out")"
# The status table is there, one row per roadmap step (check-doc-claims
# reads which steps are built from it).
[ "$(grep -cE '^\| [0-9]+\. ' "$readme")" -ge 12 ] || fail "the README's status table lost rows"

cp "$readme" long-cell.md
cell=$(printf 'x%.0s' $(seq 1 201))
printf '\n| step | state |\n|---|---|\n| 99. a paragraph | %s |\n' "$cell" >>long-cell.md
row=$(wc -l <long-cell.md)
expect_exit 1 front_page long-cell.md
expect_grep "^long-cell.md:$row: a table cell of 203 characters \(at most 200\)$" "$scratch/out"

cp "$readme" long-file.md
seq 1 251 >>long-file.md
expect_exit 1 front_page long-file.md
expect_grep "^long-file.md: [0-9]+ lines \(at most 250\)$" "$scratch/out"
