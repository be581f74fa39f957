#!/usr/bin/env bash
# Everything `make test`, `make e2e` and `make demo` need, with the slow,
# independent parts of a first-time build overlapped (`make setup`, run by
# .ci/run). The result is the same as `make tools cluster-tools images venv`;
# only the order differs:
#
#   lane kube  (CPU-bound):  the Kubernetes binaries (the longest build)
#   lane go    (CPU-bound):  helm, FerretDB, the dashboard validator, the PodMonitor
#              CRD, CoreDNS, local-path; two Go builds
#              at once fill the cores while the other downloads or links
#   lane fetch (network and disk): Debian packages, then in parallel
#              - the MySQL root (debootstrap of sid)
#              - the images' Debian roots (debootstrap of trixie)
#              - the virtualenv, then the images' wheels
#              then the images that need no Go-built tool
#   then       the operator's and the stand-in's images (helm, FerretDB)
#
# With DBBENCH_BUILD=demo (`make demo`'s first step) the lanes build only what
# the quickstart needs on the local node: no FerretDB, dashboard validator,
# PodMonitor CRD or MySQL root, no tests' servers or Chromium from Debian, and
# only the images the quickstart runs (docs/local-cluster.md).
#
# Each step is one of the idempotent scripts (hack/tools.sh, hack/cluster-tools.sh,
# hack/cluster/images.sh) with a step argument, so a second run takes seconds.
# Output lines carry their lane's name; each lane also keeps its own log in
# $SETUP_LOGS. The first lane to fail stops the others (by their PIDs) and
# the script exits non-zero, naming it. A lane that ends without a status file
# (a full disk cannot take even its few bytes: CI once waited out its 90
# minutes that way) is read from its exit code instead.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export TOOLS_DIR="${TOOLS_DIR:-$ROOT/.tools}"
export SETUP_LOGS="${SETUP_LOGS:-$ROOT/build/setup-logs}"
export MAKE="${MAKE:-make}"
mkdir -p "$SETUP_LOGS"

say() { printf 'setup: %s\n' "$*"; }

# Runs a step, timing it.
step() {
  local start=$SECONDS
  say "$* ..."
  "$@"
  say "$*: done in $((SECONDS - start)) s"
}

lane_kube() {
  step bash hack/tools.sh kubernetes
}

lane_go() {
  if [[ ${DBBENCH_BUILD:-all} == demo ]]; then
    step bash hack/tools.sh helm
  else
    step bash hack/tools.sh helm ferretdb dashboard-check podmonitor-crd
  fi
  step bash hack/cluster-tools.sh go
}

lane_fetch() {
  step bash hack/tools.sh debian
  step bash hack/cluster-tools.sh debian
  # Network- and disk-bound (debootstrap, pip): they overlap each other too.
  local mysql=() roots
  if [[ ${DBBENCH_BUILD:-all} != demo ]]; then
    step bash hack/tools.sh mysql &
    mysql=("$!")
  fi
  step bash hack/cluster/images.sh roots &
  roots=$!
  step "$MAKE" --no-print-directory venv
  step bash hack/cluster/images.sh wheels
  ((${#mysql[@]} == 0)) || wait "${mysql[0]}"
  wait "$roots"
  # The images that need no Go-built tool (the operator's needs helm, the
  # stand-in's FerretDB), while the Kubernetes build still runs: the last step
  # then has only those two to build. (A first demo waited 131 s for them all.)
  local images=(pause busybox python-base runner mariadb)
  [[ ${DBBENCH_BUILD:-all} == demo ]] || images+=(mysql postgresql)
  step bash hack/cluster/images.sh "${images[@]}"
}

# The PID of each lane's background subshell (start_lane), by lane name.
declare -A LANE_PIDS=()

# Starts a lane in the background, in its own session (so that stopping its
# group stops its children), its output prefixed with its name and kept in
# its log; its PID and its exit status go to files next to it.
start_lane() {
  local name=$1
  rm -f "$SETUP_LOGS/$name.pid" "$SETUP_LOGS/$name.status"
  # The lane runs in a new bash: the functions it needs are exported to it.
  export -f say step "lane_$name"
  local status=$SETUP_LOGS/$name.status
  # The lane writes its status as it exits, even while background steps of its
  # own still hold its output open (main then stops them).
  (
    set +e
    setsid -w bash -c "set -euo pipefail; cd '$ROOT'; echo \$\$ >'$SETUP_LOGS/$name.pid'
      trap 'rc=\$?; echo \$rc >$status || :; exit \$rc' EXIT; lane_$name" 2>&1 |
      sed -u "s/^/[$name] /" | tee "$SETUP_LOGS/$name.log"
    code=${PIPESTATUS[0]}
    [[ -s $status ]] || echo "$code" >"$status" 2>/dev/null # killed before its trap ran
    exit "$code"
  ) &
  LANE_PIDS[$name]=$!
}

# Sets LANE_STATUS to a lane's exit status once it has one, else to "": from
# its status file, or, when its subshell has ended without one (the file could
# not be written), from that subshell's exit code. (Not a command
# substitution: only this shell can wait for the subshell.)
lane_status() {
  local name=$1 file=$SETUP_LOGS/$1.status code=0
  LANE_STATUS=
  if [[ -s $file ]]; then
    LANE_STATUS=$(<"$file")
  elif ! kill -0 "${LANE_PIDS[$name]}" 2>/dev/null; then
    wait "${LANE_PIDS[$name]}" || code=$?
    say "lane $name ended without writing $file (is the disk full?): exit $code" >&2
    LANE_STATUS=$((code ? code : 1))
  fi
}

# Waits up to $1 seconds for the lanes' subshells to end, no longer: a process
# that left a lane's session can hold its output pipe open for ever.
wait_lanes() {
  local deadline=$((SECONDS + $1)) pid alive
  while ((SECONDS < deadline)); do
    alive=0
    for pid in "${LANE_PIDS[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    ((alive)) || return 0
    sleep 1
  done
  say "lanes' output still open after $1 s; not waiting for it"
}

# Stops what is left of a lane: its whole process group (a failed lane's
# background steps too).
stop_lane() {
  local pid
  pid=$(cat "$SETUP_LOGS/$1.pid" 2>/dev/null) || return 0
  kill -- "-$pid" 2>/dev/null || true
}

main() {
  local started=$SECONDS name status other
  local -A running=()
  say "tools, cluster tools, venv and images into $TOOLS_DIR (logs: $SETUP_LOGS)"
  # Interrupted (Ctrl-C, a CI timeout): the lanes run in sessions of their own.
  trap 'for name in "${!running[@]}"; do stop_lane "$name"; done; exit 130' INT TERM
  for name in kube go fetch; do
    start_lane "$name"
    running[$name]=1
  done
  while ((${#running[@]})); do
    sleep 1
    for name in "${!running[@]}"; do
      lane_status "$name"
      status=$LANE_STATUS
      [[ -n $status ]] || continue
      unset "running[$name]"
      if ((status)); then
        say "lane $name FAILED (exit $status); stopping the others. Its log: $SETUP_LOGS/$name.log"
        for other in "$name" "${!running[@]}"; do stop_lane "$other"; done
        wait_lanes 10
        exit "$status"
      fi
      say "lane $name: done at $((SECONDS - started)) s"
    done
  done
  wait_lanes 10
  trap - INT TERM
  # Their inputs are all present now: this only imports and builds images, and
  # checks that every tool is current (seconds when it is).
  step "$MAKE" --no-print-directory TOOLS_DIR="$TOOLS_DIR" tools cluster-tools images venv
  say "all done in $((SECONDS - started)) s"
}

# Sourcing (tests/unit/ci) defines the functions without running anything.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then main "$@"; fi
