#!/usr/bin/env bash
# Everything `make test`, `make e2e` and `make demo` need, with the slow,
# independent parts of a first-time build overlapped (`make setup`, run by
# .ci/run). The result is the same as `make tools cluster-tools images venv`;
# only the order differs:
#
#   lane kube  (CPU-bound):  the Kubernetes binaries (the longest build)
#   lane go    (CPU-bound):  helm, FerretDB, CoreDNS, local-path; two Go builds
#              at once fill the cores while the other downloads or links
#   lane fetch (network and disk): Debian packages, then in parallel
#              - the MySQL root (debootstrap of sid)
#              - the images' Debian roots (debootstrap of trixie)
#              - the virtualenv, then the images' wheels
#   then       images (podman imports and builds only: their inputs are ready)
#
# Each step is one of the idempotent scripts (hack/tools.sh, hack/cluster-tools.sh,
# hack/cluster/images.sh) with a step argument, so a second run takes seconds.
# Output lines carry their lane's name; each lane also keeps its own log in
# $SETUP_LOGS. The first lane to fail stops the others (by their PIDs) and
# the script exits non-zero, naming it.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export TOOLS_DIR="${TOOLS_DIR:-$ROOT/.tools}"
SETUP_LOGS="${SETUP_LOGS:-$ROOT/build/setup-logs}"
MAKE="${MAKE:-make}"
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
  step bash hack/tools.sh helm ferretdb
  step bash hack/cluster-tools.sh go
}

lane_fetch() {
  step bash hack/tools.sh debian
  step bash hack/cluster-tools.sh debian
  # Network- and disk-bound (debootstrap, pip): they overlap each other too.
  local mysql roots
  step bash hack/tools.sh mysql &
  mysql=$!
  step bash hack/cluster/images.sh roots &
  roots=$!
  step "$MAKE" --no-print-directory venv
  step bash hack/cluster/images.sh wheels
  wait "$mysql"
  wait "$roots"
}

# Starts a lane in its own session (so that stopping it stops its children),
# its output prefixed with its name and kept in its log.
pids=()
names=()
start_lane() {
  local name=$1
  setsid -w bash -c "set -euo pipefail; source '$ROOT/hack/setup.sh'; lane_$name" \
    > >(sed -u "s/^/[$name] /" | tee "$SETUP_LOGS/$name.log") 2>&1 &
  pids+=("$!")
  names+=("$name")
}

stop_lanes() {
  local pid
  for pid in "${pids[@]}"; do
    kill -- "-$pid" 2>/dev/null || true
  done
}

main() {
  local started=$SECONDS
  say "tools, cluster tools, venv and images into $TOOLS_DIR (logs: $SETUP_LOGS)"
  start_lane kube
  start_lane go
  start_lane fetch
  local left=${#pids[@]} status pid i
  while ((left)); do
    status=0
    wait -n -p pid "${pids[@]}" || status=$?
    left=$((left - 1))
    for i in "${!pids[@]}"; do [[ ${pids[$i]} == "$pid" ]] && break; done
    if ((status)); then
      say "lane ${names[$i]} FAILED (exit $status); stopping the others. Its log: $SETUP_LOGS/${names[$i]}.log"
      stop_lanes
      wait || true
      exit "$status"
    fi
    say "lane ${names[$i]}: done at $((SECONDS - started)) s"
  done
  # Their inputs are all present now: this only imports and builds images, and
  # checks that every tool is current (seconds when it is).
  step "$MAKE" --no-print-directory TOOLS_DIR="$TOOLS_DIR" tools cluster-tools images venv
  say "all done in $((SECONDS - started)) s"
}

# Sourcing (the lanes above) defines the functions without running anything.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then main "$@"; fi
