#!/usr/bin/env bash
# A check that runs far past its time is stopped, with every job it
# started, and reported failed with what it had measured and its evidence
# so far; --list gives every check's expected time and budget (JSON Lines,
# or a table), --quick only the checks that matter most, within 4 minutes.
. "$(dirname "$0")/../common.inc"
command -v python3 >/dev/null || fail "python3 is required (scripts/setup installs it)"

gpu_check="$GPUSHARE_SOURCE_DIR/scripts/gpu-check"
export TMPDIR="$scratch/tmp"
mkdir -p "$TMPDIR"

# --list: one JSON line per check, budgets adding up to 8 minutes at most,
# and the two checks of the memory work registered (skipped while absent).
expect_exit 0 "$gpu_check" --list
[ "$(wc -l <"$scratch/out")" -eq 10 ] || fail "--list does not list ten checks"
jq -s -e '(map(.kind == "gpu-check-listing" and .version == 1
               and (.expected_s | type == "number") and .expected_s <= .budget_s) | all)
          and (map(.budget_s) | add) <= 475
          and (map(select(.quick) | .quick_budget_s) | add) <= 230
          and (map(select(.quick) | .name) == ["torch-interception", "colocation", "memory-spill"])
          and (map(.name) | index("suspend") != null and index("probe-memory") != null)' \
  "$scratch/out" >/dev/null || { cat "$scratch/out"; fail "--list is not as documented"; }
expect_exit 0 "$gpu_check" --list --quick
[ "$(wc -l <"$scratch/out")" -eq 3 ] || fail "--list --quick does not list three checks"
expect_exit 0 "$gpu_check" --list --format table
expect_grep '^CHECK +EXPECTED +BUDGET +QUICK +WHAT$' "$scratch/out"
expect_grep '^hook-overhead +[0-9]+s +40s +- ' "$scratch/out"
expect_grep '^all +[0-9]+s +475s +185s ' "$scratch/out"

# Stopped: hook-overhead runs bench rounds for its 40 s; stopped at 6 s.
out="$scratch/report"
expect_exit 1 "$gpu_check" --sim --prefix "$GPUSHARE_PREFIX" --only hook-overhead --timeout 6 "$out"
jq -e '.status == "failed" and (.checks | length) == 1 and (.checks[0] |
         .name == "hook-overhead" and .status == "failed" and .stopped == true
         and .over_budget == false and .budget_s == 40
         and (.duration_s | . >= 6 and . < 30)
         and (.summary | test("^stopped after [0-9]+ s \\(--timeout 6; budget 40 s\\)")))' \
  "$out/report.json" >/dev/null || { jq . "$out/report.json"; fail "the stop is not reported"; }
# What it measured before, when it measured anything in 6 s, is reported.
if [ -s "$out/hook-overhead/partial.json" ]; then
  jq -e --slurpfile partial "$out/hook-overhead/partial.json" \
    '.checks[0].measurements == $partial[0]
     and (.checks[0].summary | test("measured before: "))' "$out/report.json" >/dev/null ||
    fail "the partial measurements were not reported"
fi
[ -s "$out/hook-overhead/check.stderr" ] || fail "the stopped check's stderr was not kept"
[ -f "$out/evidence.tar.gz" ] || fail "no archive after a stopped check"
expect_grep '^\| hook-overhead \| failed \| stopped after .* \| \*\*[0-9.]+ of 40, stopped\*\* \|$' \
  "$out/summary.md"
# Its jobs were stopped with it: no bench of this run is left.
for pid in $(pgrep -f gpushare-bench-interpose || true); do
  if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qxF "GPUSHARE_CHECK_EVIDENCE=$out/hook-overhead"; then
    fail "the stopped check left its bench running (pid $pid)"
  fi
done
