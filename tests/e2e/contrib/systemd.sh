#!/usr/bin/env bash
# The installed systemd unit passes `systemd-analyze verify`, names the
# installed gpushare-ctl, and its command line starts a coordinator that
# answers on the socket it names.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/coord.inc"
unit="$GPUSHARE_PREFIX/share/gpushare/systemd/gpushare.service"
[ -f "$unit" ] || fail "missing $unit"

exec_line=$(sed -n 's/^ExecStart=//p' "$unit")
[ "$(echo "$exec_line" | wc -l)" -eq 1 ] || fail "expected one ExecStart line in $unit"
read -r -a argv <<<"$exec_line"
[ "${argv[0]}" = "$GPUSHARE_PREFIX/bin/gpushare-ctl" ] || fail "ExecStart runs ${argv[0]}"
expect_grep '^RuntimeDirectory=gpushare$' "$unit"
expect_grep '^Restart=on-failure$' "$unit"
[[ " ${argv[*]} " == *" --socket /run/gpushare/gpushare.sock "* ]] ||
  fail "ExecStart does not serve /run/gpushare/gpushare.sock"

# The same command line, on this test's socket and with an admin group that
# exists here, serves.
group=$(id -gn)
argv=("${argv[@]/\/run\/gpushare\/gpushare.sock/$GPUSHARE_SOCKET}")
argv=("${argv[@]/#gpushare/$group}")
[ "${argv[-1]}" = "$group" ] || fail "expected --admin-group GROUP last: ${argv[*]}"
"${argv[@]}" 2>"$scratch/coordinator.log" >/dev/null &
pid=$!
wait_for "the unit's coordinator to answer" 5 gpushare-ctl --socket "$GPUSHARE_SOCKET" node
kill "$pid"
wait "$pid" || fail "the coordinator exited $? on SIGTERM: $(cat "$scratch/coordinator.log")"

if ! command -v systemd-analyze >/dev/null; then
  echo "systemd-analyze is not installed: the unit's syntax was not verified"
  exit 0
fi
# --man=no: the man pages it names need not be installed where this runs.
expect_exit 0 systemd-analyze verify --man=no "$unit"
[ ! -s "$scratch/err" ] || { cat "$scratch/err"; fail "systemd-analyze verify warned"; }
