#!/usr/bin/env bash
# gpushare-soak: churn and faults on the simulated GPU, one JSON summary.
#
#   tests/soak/soak.sh [--seed N] [--duration SECONDS] [--jobs N] [--memory SIZE] [--gpus N] [--keep]
#
# For SECONDS it keeps up to N jobs (gpushare-workload under gpushare-run:
# production and opportunistic, some --suspendable, some on their own
# managed memory, with memory limits and checksummed working sets, demand
# often above the device's capacity so that spills happen) running on a
# simulated GPU of SIZE (16GiB) beside one coordinator
# (`serve --on-violation kill`), and injects faults at random: SIGKILL of a
# job, SIGKILL and restart of the coordinator, SIGSTOP and SIGCONT of it,
# live `set --mem-limit` (below usage too), pause/resume, suspend/resume;
# with --gpus 2 or more (GPUs of SIZE each, the coordinator given the
# simulated driver, so that suspends go through the driver's checkpoint),
# also `migrate` of a random job to a random GPU (a refusal is expected:
# no room, the GPU it is on). Then it stops churning, undoes what is held, lets every job finish, and
# checks what is left: no job process, no registration, no device bytes
# above the baseline, no file the run left in its runtime directory or
# /dev/shm, no coordinator descriptor above its idle count.
#
# It prints ONE JSON object (kind "soak-summary") on stdout: jobs started,
# completions, kills (ours, expected), refusals (CUDA_ERROR_OUT_OF_MEMORY:
# demand above capacity is the point), failures by message, mismatches,
# hangs, leaks, `ls` latency p50/p99 outside faults, coordinator RSS and
# descriptors (and how many `ls` samples saw opportunistic memory on the
# host: the spills the pressure caused). Exit status: 0 when nothing was
# lost, leaked, hung or failed unexplained; 1 otherwise (the summary says
# what); 2 on a usage error.
# The seed makes the schedule of decisions repeatable (timing still
# varies: the jobs are real processes).
#
# Why a shell script: the soak drives the installed programs exactly as an
# operator or a Slurm hook does (gpushare-run, gpushare-ctl, signals), as
# the end-to-end tests do, and needs nothing the tests do not already use
# (bash, jq, coreutils, procps). Its own cost stays small: one decision and
# one `ls` per quarter second; the jobs sleep on the simulated device.
#
# Environment: GPUSHARE_PREFIX (the install prefix; default: build/stage
# beside this source tree). GPUSHARE_SOAK_KEEP=1 keeps the scratch
# directory (printed on stderr) whatever the outcome.
set -euo pipefail
export LC_ALL=C

usage() {
  echo "usage: soak.sh [--seed N] [--duration SECONDS] [--jobs N] [--memory SIZE] [--gpus N] [--keep]" >&2
  exit 2
}
die() { echo "gpushare-soak: error: $*" >&2; exit 2; }

seed=1 duration=300 max_jobs=8 memory=16GiB gpus=1 keep=${GPUSHARE_SOAK_KEEP:-}
while [ $# -gt 0 ]; do
  case $1 in
    --seed) [ $# -ge 2 ] || usage; seed=$2; shift 2 ;;
    --duration) [ $# -ge 2 ] || usage; duration=$2; shift 2 ;;
    --jobs) [ $# -ge 2 ] || usage; max_jobs=$2; shift 2 ;;
    --memory) [ $# -ge 2 ] || usage; memory=$2; shift 2 ;;
    --gpus) [ $# -ge 2 ] || usage; gpus=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    -h | --help) usage ;;
    *) echo "gpushare-soak: error: unknown argument '$1'" >&2; usage ;;
  esac
done
[[ $seed =~ ^[0-9]+$ ]] || die "--seed '$seed': expected a non-negative integer"
[[ $duration =~ ^[0-9]+$ ]] && [ "$duration" -ge 5 ] ||
  die "--duration '$duration': expected whole seconds, at least 5"
[[ $max_jobs =~ ^[0-9]+$ ]] && [ "$max_jobs" -ge 1 ] && [ "$max_jobs" -le 64 ] ||
  die "--jobs '$max_jobs': expected 1 to 64"
[[ $memory =~ ^[0-9]+GiB$ ]] || die "--memory '$memory': expected whole GiB, e.g. 16GiB"
[[ $gpus =~ ^[1-8]$ ]] || die "--gpus '$gpus': expected 1 to 8"
command -v jq >/dev/null || die "jq is required (scripts/setup installs it)"

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
prefix=${GPUSHARE_PREFIX:-$source_dir/build/stage}
[ -x "$prefix/bin/gpushare-run" ] || die "no gpushare-run under $prefix (set GPUSHARE_PREFIX)"
export PATH="$prefix/bin:$PATH"
libexec="$prefix/lib/gpushare"
workload="$libexec/gpushare-workload"
client="$libexec/tests/gpushare-cuda-client"

scratch=$(mktemp -d "${TMPDIR:-/tmp}/gpushare-soak.XXXXXX")
export GPUSHARE_SIM_STATE="$scratch/sim-state" GPUSHARE_SIM_MEMORY=$memory GPUSHARE_SIM_DEVICES=$gpus
# With several GPUs the coordinator loads the simulated driver (migrate, and
# suspends through its process checkpoint).
coordinator_env=()
[ "$gpus" -gt 1 ] && coordinator_env=(env "LD_LIBRARY_PATH=$libexec/sim")
export GPUSHARE_SOCKET="$scratch/gpushare.sock" XDG_RUNTIME_DIR="$scratch/run"
mkdir -p -m 0700 "$XDG_RUNTIME_DIR" "$scratch/jobs"
RANDOM=$seed
GiB=$((1 << 30)) MiB=$((1 << 20))
memory_bytes=$((${memory%GiB} * GiB))

now_ms() { echo $(($(date +%s%N) / 1000000)); }
rand() { echo $(($1 + RANDOM % ($2 - $1 + 1))); }  # rand LOW HIGH, inclusive
log() { echo "$(date -u +%T.%3N) $*" >>"$scratch/soak.log"; }

# ------------------------------------------------------------ coordinator
coordinator_pid=0
coordinator_stopped=0
restarts=0 stops=0
start_coordinator() {
  local ready="$scratch/ready.$RANDOM"
  "${coordinator_env[@]}" gpushare-ctl serve --socket "$GPUSHARE_SOCKET" --on-violation kill >"$ready" \
    2>>"$scratch/coordinator.log" </dev/null &
  coordinator_pid=$!
  local deadline=$(($(now_ms) + 10000))
  until [ -s "$ready" ]; do
    kill -0 "$coordinator_pid" 2>/dev/null || { note_failure "coordinator exited at start"; return 1; }
    [ "$(now_ms)" -lt "$deadline" ] || { note_failure "coordinator not ready in 10s"; return 1; }
    sleep 0.02
  done
  rm -f "$ready"
}
coordinator_fds() { ls "/proc/$coordinator_pid/fd" 2>/dev/null | wc -l; }
coordinator_rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$coordinator_pid/status" 2>/dev/null || echo 0; }

# ctl ARGS...: gpushare-ctl with a bound (a coordinator that never answers
# is a hang); output in $scratch/ctl.out, errors counted by message.
ctl_errors=()
ctl() {
  local status=0
  timeout 30 gpushare-ctl "$@" >"$scratch/ctl.out" 2>"$scratch/ctl.err" || status=$?
  if [ "$status" -eq 124 ]; then
    note_hang "gpushare-ctl $1 took over 30s"
  elif [ "$status" -ne 0 ]; then
    ctl_errors+=("$1: $(normalise <"$scratch/ctl.err")")
  fi
  return "$status"
}

# ------------------------------------------------------------ outcomes
failures=() hangs=() mismatches=0 completions=0 kills=0 refusals=0 started=0
note_failure() { failures+=("$1"); log "FAILURE: $1"; }
note_hang() { hangs+=("$1"); log "HANG: $1"; }
# The last diagnostic line, numbers and names taken out, so that failures
# group by what went wrong.
normalise() {
  grep -E 'error|FAILED|Killed' | tail -1 | sed -E 's/soak-[0-9]+/JOB/g; s/[0-9]+/N/g' | cut -c1-160
}

# ------------------------------------------------------------ jobs
declare -A job_pid=() job_deadline=() job_killed=() job_class=() held_until=() held_how=()
spawn_job() {
  local id=$started name="soak-$started"
  started=$((started + 1))
  local class=production run_args=() work_args=()
  local mem_mib=$((256 * $(rand 1 16)))  # 256 MiB .. 4 GiB (with 8 jobs, 21 GiB on average)
  if [ $((RANDOM % 10)) -lt 6 ]; then
    class=opportunistic
    run_args+=(--opportunistic)
    [ $((RANDOM % 2)) -eq 0 ] && run_args+=(--suspendable)
    [ $((RANDOM % 3)) -eq 0 ] && work_args+=(--alloc managed)
  else
    run_args+=(--production)
  fi
  # A limit above the working set (room for the context), or none.
  [ $((RANDOM % 4)) -ne 0 ] && run_args+=(--mem-limit "$((mem_mib + 1024))MiB")
  local seconds
  seconds=$(rand 4 25)
  work_args+=(--mem "${mem_mib}MiB" --duration "$seconds" --kernel-us "$(rand 200 2000)"
    --host-us "$(rand 0 2000)" --verify "$((mem_mib < 64 ? mem_mib : 64))MiB" --verify-every 50
    --chunks "$(rand 1 4)" --stop-file "$scratch/jobs/$name.stop")
  (
    # gpushare-run execs the workload: one pid, the tree file's creator too.
    gpushare-run --sim --no-coordinator --name "$name" "${run_args[@]}" -- \
      "$workload" "${work_args[@]}" >"$scratch/jobs/$name.out" 2>"$scratch/jobs/$name.err" </dev/null &
    echo $! >"$scratch/jobs/$name.pid"
    status=0
    { wait $! || status=$?; } 2>/dev/null  # a job we killed needs no notice
    echo "$status" >"$scratch/jobs/$name.status.tmp"
    mv "$scratch/jobs/$name.status.tmp" "$scratch/jobs/$name.status"
  ) &
  job_pid[$name]=$!
  job_class[$name]=$class
  # Held, paused or suspended, a job may take far longer than its duration;
  # two minutes past it is a hang.
  job_deadline[$name]=$(($(now_ms) + (seconds + 120) * 1000))
  log "start $name $class ${run_args[*]} ${work_args[*]}"
}

# The workload's own pid (gpushare-run execs it).
workload_pid() { cat "$scratch/jobs/$1.pid" 2>/dev/null || true; }

reap_jobs() {
  local name status message
  for name in "${!job_pid[@]}"; do
    if [ -f "$scratch/jobs/$name.status" ]; then
      status=$(cat "$scratch/jobs/$name.status")
      wait "${job_pid[$name]}" 2>/dev/null || true
      if [ "$status" -eq 0 ]; then
        if jq -se 'map(select(.kind == "workload-summary"))[0].verified_bytes > 0' \
          "$scratch/jobs/$name.out" >/dev/null 2>&1; then
          completions=$((completions + 1))
        else
          note_failure "exit 0 without a verified summary"
        fi
      elif [ -n "${job_killed[$name]:-}" ] && [ "$status" -eq 137 ]; then
        kills=$((kills + 1))
      else
        message=$(normalise <"$scratch/jobs/$name.err")
        [ -n "$message" ] || message="exit status $status, no diagnostic"
        if [[ $message == *"checksum mismatch"* ]]; then
          mismatches=$((mismatches + 1))
          note_failure "$message"
        elif [[ $message == *CUDA_ERROR_OUT_OF_MEMORY* ]]; then
          refusals=$((refusals + 1))
          refusal_messages+=("$message")
        else
          note_failure "$message"
        fi
      fi
      log "end $name status $status"
      unset "job_pid[$name]" "held_until[$name]" "held_how[$name]"
    elif [ "$(now_ms)" -gt "${job_deadline[$name]}" ]; then
      note_hang "$name ran two minutes past its duration"
      local pid
      pid=$(workload_pid "$name")
      [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
      job_killed[$name]=1
      job_deadline[$name]=$(($(now_ms) + 60000))
    fi
  done
}
refusal_messages=()

random_job() {
  local names=("${!job_pid[@]}")
  [ ${#names[@]} -gt 0 ] || return 1
  echo "${names[RANDOM % ${#names[@]}]}"
}

# ------------------------------------------------------------ faults
declare -A fault_count=()
fault() { fault_count[$1]=$((${fault_count[$1]:-0} + 1)); log "fault $*"; }

kill_job() {
  local name pid
  name=$(random_job) || return 0
  pid=$(workload_pid "$name")
  [ -n "$pid" ] || return 0
  job_killed[$name]=1
  kill -KILL "$pid" 2>/dev/null || true
  fault job-kill "$name"
}

restart_coordinator() {
  fault coordinator-kill
  kill -KILL "$coordinator_pid" 2>/dev/null || true
  wait "$coordinator_pid" 2>/dev/null || true
  restarts=$((restarts + 1))
  # A suspended job resumes by itself when its coordinator dies (a suspend
  # is not restored); a paused one may be paused again by the next
  # coordinator, which restores the pauses it finds in its decisions file
  # (gpushare-ctl(1)), so a pause stays held here until a resume succeeds.
  # With several GPUs a suspend goes through the driver's checkpoint, which
  # nobody undoes but a resume (the new coordinator finds the job locked or
  # checkpointed in the driver): it stays held, and is resumed.
  local name
  for name in "${!held_how[@]}"; do
    [ "$gpus" -eq 1 ] && [ "${held_how[$name]}" = suspend ] && unset "held_how[$name]" "held_until[$name]"
  done
  start_coordinator
}

stop_coordinator_for_a_while() {
  fault coordinator-stop
  stops=$((stops + 1))
  kill -STOP "$coordinator_pid"
  coordinator_stopped=1
  sleep "$(rand 1 30)e-1"  # the fault's length, 0.1 to 3 s
  kill -CONT "$coordinator_pid"
  coordinator_stopped=0
}

set_limit() {
  local name
  name=$(random_job) || return 0
  # Half the time below what the job holds (it must not be killed for it).
  fault set-limit "$name"
  ctl set "$name" --mem-limit "$((256 * $(rand 1 16)))MiB" || true
}

hold_job() {  # pause or suspend, undone 0.5 to 4 s later
  local name how=pause
  name=$(random_job) || return 0
  [ -z "${held_how[$name]:-}" ] || return 0
  [ "${job_class[$name]}" = opportunistic ] && [ $((RANDOM % 2)) -eq 0 ] && how=suspend
  fault "$how" "$name"
  if ctl "$how" "$name"; then
    held_how[$name]=$how
    held_until[$name]=$(($(now_ms) + $(rand 500 4000)))
  fi
}

release_held() {  # release_held [all]
  local name
  for name in "${!held_how[@]}"; do
    if [ "${1:-}" = all ] || [ "$(now_ms)" -ge "${held_until[$name]}" ]; then
      # Kept when the resume fails (the job has not registered with a
      # restarted coordinator yet): tried again at the next turn.
      if ctl resume "$name"; then unset "held_how[$name]" "held_until[$name]"; fi
    fi
  done
}

migrate_job() {  # to a random GPU; refused when it has no room or is there
  local name
  name=$(random_job) || return 0
  [ -z "${held_how[$name]:-}" ] || return 0
  fault migrate "$name"
  ctl migrate "$name" --to "$((RANDOM % gpus))" --wait-timeout 60s || true
}

# ------------------------------------------------------------ samples
ls_ms=() rss_samples=() fds_samples=() spilled_samples=0
sample_ls() {
  local start end
  start=$(date +%s%N)
  if ctl ls; then
    end=$(date +%s%N)
    ls_ms+=($(((end - start) / 1000000)))
    # Whether some opportunistic memory is on the host now: spills happen.
    if jq -se 'map(.mem_host_resident_bytes // 0) | add > 0' "$scratch/ctl.out" >/dev/null 2>&1; then
      spilled_samples=$((spilled_samples + 1))
    fi
  fi
}
sample_coordinator() {
  rss_samples+=("$(coordinator_rss_kb)")
  fds_samples+=("$(coordinator_fds)")
}

# ------------------------------------------------------------ leaks
# Files the run may leave: anything in its private runtime directory, and
# the tree files in /dev/shm that its jobs created (the creator's pid is at
# byte 8; other programs of the same user may have their own there).
list_files() {
  find "$XDG_RUNTIME_DIR" -mindepth 1 2>/dev/null
  local file creator
  for file in /dev/shm/gpushare-tree-"$(id -u)"-*; do
    [ -f "$file" ] || continue
    creator=$(od -An -t d4 -j 8 -N 4 "$file" 2>/dev/null | tr -d ' ')
    [ -n "$creator" ] && grep -qx -- "$creator" "$scratch"/jobs/*.pid 2>/dev/null && echo "$file"
  done
  return 0
}
device_free() {
  GPUSHARE_SOCKET=/nonexistent LD_LIBRARY_PATH="$libexec/sim" "$client" init ctx info 2>/dev/null |
    jq -r 'select(.step == "info") | .free_bytes'
}

cleanup() {
  local status=$?
  [ "$coordinator_stopped" -eq 1 ] && kill -CONT "$coordinator_pid" 2>/dev/null
  local pid
  for pid in $(pgrep -f -- "$scratch/" 2>/dev/null); do
    [ "$pid" != $$ ] && kill -KILL "$pid" 2>/dev/null
  done
  if [ -n "$keep" ] || [ "$status" -ne 0 ]; then
    echo "gpushare-soak: scratch kept in $scratch" >&2
  else
    rm -rf "$scratch"
  fi
  return "$status"
}
trap cleanup EXIT

# ------------------------------------------------------------ the run
baseline_free=$(device_free)
baseline_files=$(list_files | sort)
start_coordinator
idle_fds=$(coordinator_fds)
idle_rss=$(coordinator_rss_kb)
log "seed $seed duration ${duration}s jobs $max_jobs memory $memory; idle fds $idle_fds"

end_at=$(($(now_ms) + duration * 1000))
next_sample=0
while [ "$(now_ms)" -lt "$end_at" ]; do
  reap_jobs
  release_held
  if [ ${#job_pid[@]} -lt "$max_jobs" ] && [ $((RANDOM % 3)) -ne 0 ]; then
    spawn_job
  fi
  roll=$((RANDOM % 1000))
  if [ "$roll" -lt 25 ]; then
    kill_job
  elif [ "$roll" -lt 33 ]; then
    restart_coordinator
  elif [ "$roll" -lt 43 ]; then
    stop_coordinator_for_a_while
  elif [ "$roll" -lt 83 ]; then
    set_limit
  elif [ "$roll" -lt 133 ]; then
    hold_job
  elif [ "$roll" -lt 153 ] && [ "$gpus" -gt 1 ]; then
    migrate_job
  fi
  sample_ls
  if [ "$(now_ms)" -ge "$next_sample" ]; then
    sample_coordinator
    next_sample=$(($(now_ms) + 5000))
  fi
  sleep 0.25
done

# Drain: undo holds, tell every job to stop at its next iteration, wait.
log "draining ${#job_pid[@]} jobs"
release_held all
for name in "${!job_pid[@]}"; do touch "$scratch/jobs/$name.stop"; done
drain_deadline=$(($(now_ms) + 180000))
while [ ${#job_pid[@]} -gt 0 ]; do
  release_held all
  reap_jobs
  if [ "$(now_ms)" -gt "$drain_deadline" ]; then
    for name in "${!job_pid[@]}"; do note_hang "$name did not stop within 3 min of its stop file"; done
    for name in "${!job_pid[@]}"; do
      pid=$(workload_pid "$name")
      [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
      job_killed[$name]=1
    done
    drain_deadline=$(($(now_ms) + 60000))
  fi
  sleep 0.2
done

# Leaks, with every job gone.
leaks=()
wait_gone=$(($(now_ms) + 10000))
until ctl ls && [ ! -s "$scratch/ctl.out" ]; do
  if [ "$(now_ms)" -gt "$wait_gone" ]; then
    leaks+=("registrations: $(wc -l <"$scratch/ctl.out") jobs still listed with none running")
    break
  fi
  sleep 0.1
done
sample_coordinator
end_fds=$(coordinator_fds)
end_rss=$(coordinator_rss_kb)
# The first coordinator's idle count is the reference for the last one's
# (the same program with no job).
# With several GPUs the coordinator loads the driver at its first migrate or
# suspend, which keeps its state file open: one descriptor more, once.
driver_fds=0
[ "$gpus" -gt 1 ] && driver_fds=1
[ "$end_fds" -le $((idle_fds + driver_fds)) ] ||
  leaks+=("coordinator descriptors: $end_fds with no job, $idle_fds when it started")
end_free=$(device_free)
[ -n "$end_free" ] && [ "$end_free" = "$baseline_free" ] ||
  leaks+=("device bytes: $((baseline_free - ${end_free:-0})) not given back")
kill -TERM "$coordinator_pid"
wait "$coordinator_pid" 2>/dev/null || true
left=$(pgrep -f -- "$scratch/" | grep -vx $$ || true)
[ -z "$left" ] || leaks+=("processes: $(echo "$left" | wc -l) still running ($(echo $left))")
# A killed job's tree file goes when its janitor sees no process left:
# soon after, not at once.
files_deadline=$(($(now_ms) + 15000))
until extra_files=$(comm -13 <(echo "$baseline_files") <(list_files | sort)) && [ -z "$extra_files" ]; do
  [ "$(now_ms)" -lt "$files_deadline" ] || break
  sleep 0.2
done
[ -z "$extra_files" ] || leaks+=("files: $(echo "$extra_files" | tr '\n' ' ')")
if grep -q "; killed" "$scratch/coordinator.log"; then
  note_failure "the coordinator killed a job as a violator: $(grep '; killed' "$scratch/coordinator.log" | head -1 | cut -c1-200)"
fi

# ------------------------------------------------------------ summary
percentile() {  # percentile P VALUES...
  local p=$1; shift
  [ $# -gt 0 ] || { echo null; return; }
  printf '%s\n' "$@" | sort -n | awk -v p="$p" '{ v[NR] = $1 } END { i = int((NR - 1) * p / 100) + 1; print v[i] }'
}
by_message() { [ $# -gt 0 ] && printf '%s\n' "$@" | jq -R . | jq -s 'group_by(.) | map({(.[0]): length}) | add' || echo '{}'; }
max_of() { printf '%s\n' "$@" | sort -n | tail -1; }
faults_json=$(for key in "${!fault_count[@]}"; do echo "{\"$key\": ${fault_count[$key]}}"; done | jq -s 'add // {}')

ok=true
[ ${#failures[@]} -eq 0 ] && [ ${#hangs[@]} -eq 0 ] && [ ${#leaks[@]} -eq 0 ] && [ "$mismatches" -eq 0 ] &&
  [ "$completions" -gt 0 ] || ok=false
jq -cn --argjson ok "$ok" --argjson seed "$seed" --argjson duration "$duration" \
  --arg memory "$memory" --argjson jobs "$started" --argjson completions "$completions" \
  --argjson kills "$kills" --argjson refusals "$refusals" --argjson mismatches "$mismatches" \
  --argjson restarts "$restarts" --argjson stops "$stops" --argjson faults "$faults_json" \
  --argjson failures "$(by_message "${failures[@]}")" \
  --argjson refusal_messages "$(by_message "${refusal_messages[@]}")" \
  --argjson hangs "$(printf '%s\n' "${hangs[@]}" | jq -R 'select(. != "")' | jq -s .)" \
  --argjson leaks "$(printf '%s\n' "${leaks[@]}" | jq -R 'select(. != "")' | jq -s .)" \
  --argjson ctl_errors "$(by_message "${ctl_errors[@]}")" \
  --argjson ls_p50 "$(percentile 50 "${ls_ms[@]}")" --argjson ls_p99 "$(percentile 99 "${ls_ms[@]}")" \
  --argjson ls_samples "${#ls_ms[@]}" --argjson spilled "$spilled_samples" \
  --argjson rss_start "$idle_rss" --argjson rss_end "$end_rss" \
  --argjson rss_max "$(max_of "${rss_samples[@]}")" \
  --argjson fds_start "$idle_fds" --argjson fds_end "$end_fds" \
  --argjson fds_max "$(max_of "${fds_samples[@]}")" \
  '{kind: "soak-summary", version: 1, ok: $ok, seed: $seed, duration_s: $duration,
    device_memory: $memory, jobs: $jobs, completions: $completions, kills: $kills,
    refusals: $refusals, refusal_messages: $refusal_messages, failures: $failures,
    mismatches: $mismatches, hangs: $hangs, leaks: $leaks, faults: $faults,
    coordinator_restarts: $restarts, coordinator_stops: $stops, ctl_errors: $ctl_errors,
    ls_latency_ms: {p50: $ls_p50, p99: $ls_p99, samples: $ls_samples},
    ls_samples_with_spilled_memory: $spilled,
    coordinator: {rss_kb_start: $rss_start, rss_kb_end: $rss_end, rss_kb_max: $rss_max,
                  fds_start: $fds_start, fds_end: $fds_end, fds_max: $fds_max}}'
[ "$ok" = true ]
