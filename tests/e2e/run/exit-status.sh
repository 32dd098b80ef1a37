#!/usr/bin/env bash
# gpushare-run's exit status, as nice(1)'s: 125 for its own failures (usage
# errors included), 126 when the command cannot run, 127 when it is not
# found, otherwise the command's own status.
. "$(dirname "$0")/../common.inc"

expect_exit 125 gpushare-run                        # no command at all
expect_grep "^gpushare-run: error: command is required$" "$scratch/err"
expect_grep "^Try 'gpushare-run --help' for more information\.$" "$scratch/err"
expect_exit 125 gpushare-run --no-such-option true  # unknown option before the command
expect_grep "^gpushare-run: error: .*--no-such-option" "$scratch/err"
expect_exit 125 gpushare-run --mem-limit 8XB true   # invalid value, named
expect_grep "^gpushare-run: error: .*'8XB'" "$scratch/err"
expect_exit 125 gpushare-run --production --opportunistic true
expect_grep "^gpushare-run: error: --production excludes --opportunistic$" "$scratch/err"
expect_exit 125 gpushare-run -p colour=red true
expect_grep "^gpushare-run: error: unknown property 'colour'" "$scratch/err"
expect_exit 0 gpushare-run true
[ ! -s "$scratch/err" ] || fail "a successful run wrote to stderr: $(cat "$scratch/err")"
expect_exit 1 gpushare-run false
expect_exit 3 gpushare-run sh -c 'exit 3'
printf '#!/bin/sh\nexit 0\n' >"$scratch/not-executable"
expect_exit 126 gpushare-run "$scratch/not-executable"
expect_grep "not-executable': Permission denied" "$scratch/err"
expect_exit 126 gpushare-run "$scratch"                 # a directory
expect_grep "^gpushare-run: error: .*$scratch'?: (Permission denied|Is a directory)" "$scratch/err"
# Over a PATH the user can search (execvp reports EACCES, so 126, when some
# entry cannot be searched, as a root PATH is for other users).
PATH="$GPUSHARE_PREFIX/bin:/usr/bin:/bin" expect_exit 127 gpushare-run no-such-command-gpushare
expect_grep "no-such-command-gpushare': No such file or directory" "$scratch/err"

# Options stop at the command: the command's own options pass untouched.
expect_exit 0 gpushare-run --name n1 -- sh -c 'echo "$0 $1"' --mem-limit x
[ "$(cat "$scratch/out")" = "--mem-limit x" ] || fail "arguments were not passed intact"
expect_exit 0 gpushare-run --name n1 sh -c 'echo "$0"' --opportunistic
[ "$(cat "$scratch/out")" = "--opportunistic" ] || fail "an option after the command was parsed"

# A property takes one word; the command after it keeps its own options.
expect_exit 0 gpushare-run -p log=info -p name=x sh -c 'echo "$0"' --mem
[ "$(cat "$scratch/out")" = "--mem" ] || fail "-p swallowed the command's words"

# An interposer that cannot be found is gpushare-run's own failure.
GPUSHARE_INTERPOSER=/nonexistent/lib.so expect_exit 125 gpushare-run true
expect_grep "cannot find the interposer" "$scratch/err"
