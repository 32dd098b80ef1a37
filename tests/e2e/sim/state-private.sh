#!/usr/bin/env bash
# Plays a co-tenant against the simulated GPU's state file: its default path
# is predictable, so another user could create it first (mode 0666) and
# later truncate it, killing the victim's jobs with SIGBUS. The default now
# lives in a private directory of the user's; a directory or a file there
# that another user planted is refused with a clear message, and so is an
# explicit GPUSHARE_SIM_STATE file that another user owns or may write.
. "$(dirname "$0")/../common.inc"
. "$e2e_dir/users.inc"

as_victim+=(env -u GPUSHARE_SIM_STATE)
base=/dev/shm
[ -w /dev/shm ] || base=/tmp
victim_dir=$base/gpushare-sim.$victim
[ -e "$victim_dir" ] && skip "$victim_dir exists already"
remove_at_exit "$victim_dir"
workload=(gpushare-run --sim --no-coordinator "$libexec/gpushare-workload" --iterations 1 --mem 1MiB)

# 1. The attacker creates the victim's default directory first.
"${as_attacker[@]}" mkdir -m 0777 "$victim_dir"
"${as_attacker[@]}" touch "$victim_dir/state"
chmod 0666 "$victim_dir/state"
expect_exit 1 "${as_victim[@]}" "${workload[@]}"
expect_grep "refusing $victim_dir for the simulated GPU state: it must be a directory of this user's, mode 0700" \
  "$scratch/err"
[ -s "$victim_dir/state" ] && fail "the victim wrote into the attacker's file"
rm -rf "$victim_dir"

# 2. Without interference the victim's default directory is private.
expect_exit 0 "${as_victim[@]}" "${workload[@]}"
[ "$(stat -c '%u %a' "$victim_dir")" = "$victim 700" ] ||
  fail "the default state directory is $(stat -c '%u %a' "$victim_dir"), not $victim 700"

# 3. An explicit state file that another user owns and may truncate.
"${as_attacker[@]}" touch "$open_dir/state"
chmod 0666 "$open_dir/state"
expect_exit 1 "${as_victim[@]}" GPUSHARE_SIM_STATE="$open_dir/state" "${workload[@]}"
expect_grep "refusing the simulated GPU state file $open_dir/state \(uid $attacker, mode 666\)" "$scratch/err"

# 4. A link planted at an explicit path is not followed.
ln -s "$scratch/elsewhere" "$open_dir/link"
expect_exit 1 "${as_victim[@]}" GPUSHARE_SIM_STATE="$open_dir/link" "${workload[@]}"
expect_grep "cannot open the simulated GPU state file $open_dir/link: it is a symbolic link" "$scratch/err"
[ -e "$scratch/elsewhere" ] && fail "the link was followed"
echo "sim-state-private: ok"
