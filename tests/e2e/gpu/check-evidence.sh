#!/usr/bin/env bash
# scripts/gpu-check keeps, for every check, what explains it under
# OUTDIR/NAME (the check's stderr and record, what it was told, the
# coordinator's log, `gpushare-ctl ls` sampled while it ran, the jobs its
# log names, each job's output, what it left in its scratch) and one archive of it all of at most
# 16 MiB; reports each check's time against its budget; and names the
# tested install's gpushare version, never the git checkout of the
# directory it was started in. Run here as --quick on two checks, from
# inside another git repository.
. "$(dirname "$0")/../common.inc"
command -v python3 >/dev/null || fail "python3 is required (scripts/setup installs it)"
command -v git >/dev/null || skip "git is not installed"

gpu_check="$GPUSHARE_SOURCE_DIR/scripts/gpu-check"
export TMPDIR="$scratch/tmp"
mkdir -p "$TMPDIR"

# Another project's checkout, with a commit of its own, as the current directory.
other="$scratch/other"
mkdir -p "$other"
git -C "$other" init -q
git -C "$other" config user.email test@example.invalid
git -C "$other" config user.name test
echo other >"$other/file"
git -C "$other" add file
git -C "$other" commit -q -m other
other_commit=$(git -C "$other" rev-parse --short=7 HEAD)
installed=$(gpushare-run --version)
installed=${installed#gpushare-run }

out="$scratch/report"
status=0
(cd "$other" && "$gpu_check" --sim --quick --prefix "$GPUSHARE_PREFIX" \
  --only torch-interception,memory-spill "$out") >"$scratch/stdout" 2>"$scratch/stderr" ||
  status=$?
report="$out/report.json"
[ -f "$report" ] || { cat "$scratch/stderr"; fail "no report.json (exit $status)"; }
[ "$status" -eq 0 ] || { cat "$scratch/stderr"; jq . "$report"; fail "gpu-check exited $status"; }

# The version is the install's own.
jq -e --arg line "$installed" --arg prefix "$GPUSHARE_PREFIX" --arg other "$other_commit" '
  .gpushare.version_line == $line and .gpushare.prefix == $prefix
  and (.gpushare.version | test("^[0-9]+\\.[0-9]+\\.[0-9]+$"))
  and (.gpushare_commit == .gpushare.commit)
  and ((.gpushare_commit // "") | startswith($other) | not)' "$report" >/dev/null ||
  { jq '{gpushare, gpushare_commit}' "$report"; fail "the report does not name the install's version ($installed)"; }
expect_grep "^- gpushare: $(printf '%s' "$installed" | sed 's/[().]/\\&/g'), installed in $GPUSHARE_PREFIX\$" \
  "$out/summary.md"
if grep -q "$other_commit" "$out/summary.md" "$report"; then
  fail "the report names the commit of the directory it was started in ($other_commit)"
fi
case $installed in
  *"(commit "*) ;;
  *) if git -C "$GPUSHARE_SOURCE_DIR" rev-parse --git-dir >/dev/null 2>&1; then
       fail "built from a git checkout, yet the install names no commit: $installed"
     fi ;;
esac

# Budgets: the quick ones, passed to each check, reported against its time.
jq -e '.quick == true and .limit_s == 240 and .budget_s == 95
       and ([.checks[] | {name, budget_s}] == [{"name": "torch-interception", "budget_s": 30},
                                              {"name": "memory-spill", "budget_s": 65}])
       and all(.checks[]; .status == "passed" and (.duration_s | type == "number")
               and .over_budget == (.duration_s > .budget_s) and .stopped == false
               and .evidence == .name + "/")' "$report" >/dev/null ||
  { jq . "$report"; fail "the budgets are not reported as documented"; }
expect_grep '^\| torch-interception \| passed \| .* \| (\*\*)?[0-9]+\.[0-9] of 30(, over\*\*)? \|$' \
  "$out/summary.md"
expect_grep '^- time: [0-9]+ s for the checks, budgets 95 s \(the suite.s limit 240 s\)' \
  "$out/summary.md"

# The evidence of each check.
for name in torch-interception memory-spill; do
  dir="$out/$name"
  [ -s "$dir/check.stderr" ] || fail "$name: no check.stderr"
  jq -e --arg name "$name" 'select(.kind == "gpu-check") | .name == $name' "$dir/check.stdout" \
    >/dev/null || fail "$name: check.stdout does not hold its record"
  budget=$(jq --arg name "$name" '.checks[] | select(.name == $name) | .budget_s' "$report")
  for line in "GPUSHARE_CHECK_QUICK=1" "GPUSHARE_CHECK_BUDGET_S=$budget" \
              "GPUSHARE_CHECK_EVIDENCE=$dir" "GPUSHARE_COMPUTE_TRACE=$dir/compute-trace-%p.jsonl"; do
    grep -qxF "$line" "$dir/environment.txt" || fail "$name was not told $line"
  done
  [ -s "$dir/coordinator/coordinator.log" ] || fail "$name: no coordinator log"
  jq -e 'has("t_s") and has("exit")' "$dir/ls-samples.jsonl" >/dev/null ||
    fail "$name: no ls samples"
done
# The interception job's own output, the interposer's debug log in it.
grep -q "wrapped" "$out"/torch-interception/*-torch_interception_job.py.err ||
  fail "the interception job's stderr was not kept"
grep -q "gc-interception" "$out/torch-interception/coordinator/coordinator.log" ||
  fail "the coordinator's log does not name the interception job"
# The jobs each check ran, taken from what its coordinator recorded (the
# registration and the exit in its log), with the count of ls samples that
# showed each: a job of a second or two, sampled every 0.5 s, may be in no
# sample on a loaded machine, so its presence never rests on the samples.
# The samples ran while the coordinator answered.
jq -se 'length == 1 and (.[0] | .kind == "job-seen" and .name == "gc-interception"
        and .registered and (.ended == "exited" or .ended == "disconnected")
        and (.pids | length) >= 1
        and (.ls_samples | type == "number"))' \
  "$out/torch-interception/jobs-seen.jsonl" >/dev/null ||
  fail "jobs-seen does not record the interception job: $(cat "$out/torch-interception/jobs-seen.jsonl")"
jq -se 'all(.[]; .registered and (.name | startswith("gc-spill-")))
        and any(.[]; .name | startswith("gc-spill-opp-"))
        and any(.[]; .name | startswith("gc-spill-prod-"))' \
  "$out/memory-spill/jobs-seen.jsonl" >/dev/null ||
  fail "jobs-seen does not record the spill pair: $(cat "$out/memory-spill/jobs-seen.jsonl")"
jq -se 'any(.[]; .jobs)' "$out/torch-interception/ls-samples.jsonl" >/dev/null ||
  fail "no ls sample got an answer from the coordinator"
# What the spill check left in its scratch: its jobs' output.
ls "$out"/memory-spill/scratch/*-opportunistic.err >/dev/null 2>&1 ||
  fail "the spill jobs' stderr was not kept"

# One archive of it all, within 16 MiB, its size in the report.
archive="$out/evidence.tar.gz"
[ -f "$archive" ] || fail "no evidence.tar.gz"
size=$(stat -c %s "$archive")
[ "$size" -le 16777216 ] || fail "the archive is $size bytes, over 16 MiB"
jq -e --argjson size "$size" '.evidence_archive.path == "evidence.tar.gz"
  and .evidence_archive.bytes == $size and .evidence_archive.limit_bytes == 16777216
  and .evidence_archive.cut == [] and .evidence_archive.left_out == []' "$report" >/dev/null ||
  { jq .evidence_archive "$report"; fail "the report does not describe the archive"; }
tar -tzf "$archive" >"$scratch/listing"
for path in evidence/report.json evidence/summary.md evidence/torch-interception/check.stderr \
            evidence/torch-interception/coordinator/coordinator.log \
            evidence/memory-spill/ls-samples.jsonl; do
  grep -qxF "$path" "$scratch/listing" || fail "the archive lacks $path"
done

# The limit holds whatever the checks leave: 40 MiB that do not compress
# become at most 16 MiB, the big files cut at their middle and named, the
# small ones whole.
big="$scratch/big"
mkdir -p "$big/a" "$big/b"
head -c 30M /dev/urandom >"$big/a/trace.jsonl"
head -c 10M /dev/urandom >"$big/b/log"
seq 1 1000 >"$big/b/small"
python3 "$GPUSHARE_SOURCE_DIR/tests/gpu/evidence.py" archive "$big" "$big/e.tar.gz" \
  >"$scratch/packed"
size=$(stat -c %s "$big/e.tar.gz")
[ "$size" -le 16777216 ] || fail "the archive of 40 MiB is $size bytes, over 16 MiB"
jq -e '.cut == ["a/trace.jsonl", "b/log"] and .left_out == []' "$scratch/packed" >/dev/null ||
  fail "not the big files cut: $(cat "$scratch/packed")"
mkdir "$big/x"
tar -xzf "$big/e.tar.gz" -C "$big/x"
cmp -s "$big/b/small" "$big/x/evidence/b/small" || fail "a small file was not kept whole"
grep -q "bytes cut here" "$big/x/evidence/a/trace.jsonl" || fail "a cut file does not say so"
expect_grep '^cut to [0-9]+ bytes, its beginning and end \(of 31457280\): a/trace.jsonl$' \
  "$big/x/evidence/ARCHIVE-NOTES.txt"

# The helpers other checks keep their evidence with (tests/gpu/gpucheck.py):
# a background job's output goes straight to the evidence (so a job killed
# with its check still left it), kept text is bounded, measurements kept on
# the way are reported with the record.
kept="$scratch/kept"
GPUSHARE_GPU_CHECK_PREFIX="$GPUSHARE_PREFIX" GPUSHARE_GPU_CHECK_SCRATCH="$scratch" \
  GPUSHARE_CHECK_EVIDENCE="$kept" GPUSHARE_CHECK_QUICK=1 GPUSHARE_CHECK_BUDGET_S=12.5 \
  PYTHONPATH="$GPUSHARE_SOURCE_DIR/tests/gpu" python3 - >"$scratch/record" <<'PY'
import gpucheck
ctx = gpucheck.Context("helpers")
assert ctx.quick and ctx.budget_s == 12.5 and 0 < ctx.remaining_s() <= 12.5
job = ctx.start(["sh", "-c", "echo out; echo err >&2; exit 3"], label="pair production")
assert job.wait(timeout=30) == (3, "out\n", "err\n")
slow = ctx.start(["sleep", "30"])
assert slow.wait(timeout=0.2)[0] == 124
ctx.keep("view", "x" * (gpucheck.KEPT_BYTES + 10))
ctx.measure("early", 1)
ctx.finish("passed", "done", {"late": 2})
PY
jq -e '.measurements == {"early": 1, "late": 2} and .status == "passed"' "$scratch/record" \
  >/dev/null || fail "the helpers' record: $(cat "$scratch/record")"
[ "$(cat "$kept/01-pair-production.err")" = err ] || fail "the job's stderr was not kept"
grep -qx "exit 3" "$kept/01-pair-production.cmd" || fail "the job's exit status was not kept"
grep -qx "exit 124" "$kept/02-sleep.cmd" || fail "the killed job's status was not kept"
[ "$(head -n 1 "$kept/03-view.txt")" = "[first 10 bytes left out]" ] ||
  fail "kept text is not bounded"
jq -e '. == {"early": 1}' "$kept/partial.json" >/dev/null || fail "no partial.json"
