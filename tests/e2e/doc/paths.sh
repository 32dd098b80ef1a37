#!/usr/bin/env bash
# Every repository path that a comment, a script or a document names exists
# (scripts/check-path-names over the source tree); and the check fires,
# naming file and line, on names planted in a copy: a moved header named
# with its old folder, a path written from inside lib/ that leads nowhere,
# a bare source file that no folder holds, in code and in a document. What
# names no file of ours passes: a system header, a placeholder
# (tests/e2e/NAME.sh), a shell variable's path, a URL, gpu-check's output.
. "$(dirname "$0")/../common.inc"
command -v python3 >/dev/null || fail "python3 is required (scripts/setup installs it)"
checker="$GPUSHARE_SOURCE_DIR/scripts/check-path-names"

expect_exit 0 "$checker"
[ ! -s "$scratch/out" ] || fail "names of files that do not exist: $(cat "$scratch/out")"

# (The planted names are built from variables here, so that this script
# names no missing file itself.)
copy="$scratch/tree"
no=gone
mkdir -p "$copy/lib/interpose/memory" "$copy/lib/coord/job" "$copy/docs" "$copy/tests/e2e"
: >"$copy/lib/interpose/memory/suspend.h"
: >"$copy/tests/e2e/common.inc"
cat >"$copy/lib/coord/job/job_client.h" <<TEXT
// Suspend and resume (lib/interpose/memory/suspend.h, memory/suspend.h,
// suspend.h): all three are right.
// The old home (lib/interpose/$no.h) is wrong.
#include <unistd.h>
#include "interpose/memory/suspend.h"
// Read once (interpose/$no.cc); the worker ($no.cc).
TEXT
cat >"$copy/docs/design.md" <<TEXT
Each test is \`tests/e2e/NAME.sh\` beside \`tests/e2e/common.inc\`; see
<https://example.org/lib/x.h>, \`\$scratch/tree.sh\`, \`results/summary.md\` and
\`<cuda.h>\`.
A moved page: \`docs/$no.md\`.
TEXT
expect_exit 1 "$checker" --root "$copy"
cat >"$scratch/want" <<TEXT
docs/design.md:4: names 'docs/$no.md', which does not exist
lib/coord/job/job_client.h:3: names 'lib/interpose/$no.h', which does not exist
lib/coord/job/job_client.h:6: names 'interpose/$no.cc', which does not exist
lib/coord/job/job_client.h:6: names '$no.cc', which does not exist
TEXT
diff -u "$scratch/want" "$scratch/out" || fail "not exactly the four planted names"
expect_grep "^check-path-names: error: 4 name\(s\) of files that do not exist$" "$scratch/err"

# Mended, the copy passes.
sed -i "s|/$no\.h|/memory/suspend.h|; s|interpose/$no\.cc|interpose/memory/suspend.h|; s|($no\.cc)|(suspend.h)|" \
  "$copy/lib/coord/job/job_client.h"
sed -i "s|docs/$no\.md|docs/design.md|" "$copy/docs/design.md"
expect_exit 0 "$checker" --root "$copy"

expect_exit 2 "$checker" --root "$scratch/nowhere"
expect_grep "nowhere: no such directory" "$scratch/err"
