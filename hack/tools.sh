#!/usr/bin/env bash
# Build or install every tool the tests need, from package registries only.
#
# Idempotent: each tool is skipped when the pinned version is already in
# $TOOLS_DIR/bin, so a second run takes seconds. Nothing is downloaded from
# outside the Debian archive, PyPI and the Go module proxy.
#
# Usage: hack/tools.sh [STEP...]   STEP in: debian kubernetes helm mysql ferretdb
# dashboard-check podmonitor-crd kwok (default: all but kwok, in that order;
# `make scale` alone needs kwok). With DBBENCH_BUILD=demo (`make demo`), only
# what the quickstart needs on the local node: the default steps are debian,
# kubernetes and helm, and debian installs etcd and what the virtualenv's
# mysqlclient compiles against, not the tests' servers or Chromium.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS_DIR="${TOOLS_DIR:-$ROOT/.tools}"
BIN="$TOOLS_DIR/bin"
K8S_VERSION="v1.34.4"
HELM_VERSION="v3.19.0"
K8S_CMDS=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)
# libmariadb-dev + pkg-config: the runner's mysqlclient driver compiles against them.
# chromium + chromium-driver: the report and results-browser tests render pages headless.
# postgresql-15 (bookworm's server, with pgbench and pg_basebackup): the runner's
# PostgreSQL contract, the streaming-replication tests and `make bench`; libpq-dev:
# the bench compiles psycopg's C build (psycopg-c) against it.
# prometheus: a real Prometheus scrapes the /metrics endpoints and evaluates the
# chart's dashboard queries (tests/integration/chart/test_dashboard_prometheus.py).
DEBIAN_PACKAGES=(etcd-server mariadb-server mariadb-client sysbench libmariadb-dev pkg-config
  chromium chromium-driver postgresql-15 libpq-dev prometheus)
DEFAULT_STEPS=(debian kubernetes helm mysql ferretdb dashboard-check podmonitor-crd)
if [[ ${DBBENCH_BUILD:-all} == demo ]]; then
  DEBIAN_PACKAGES=(etcd-server libmariadb-dev pkg-config)
  DEFAULT_STEPS=(debian kubernetes helm)
fi
# Oracle MySQL is only in Debian's unstable suite: it runs from a chroot of it.
MYSQL_ROOT="$TOOLS_DIR/mysql-root"
MYSQL_SUITE="sid"
MYSQL_ROOT_PACKAGES="mysql-server-core,mysql-client-core"
# A MongoDB-protocol server (SQLite backend) for the runner's MongoDB contract suite.
FERRETDB_MODULE="github.com/FerretDB/FerretDB"
FERRETDB_VERSION="v1.24.0"
FERRETDB_PATCH="$ROOT/hack/ferretdb-w0.patch"
# The Grafana dashboard validator (hack/dashboard-check, Grafana Foundation SDK).
DASHBOARD_CHECK_DIR="$ROOT/hack/dashboard-check"
# The PodMonitor CRD the chart's PodMonitors are validated against
# (tests/integration/chart/test_podmonitors_crd.py): taken from the prometheus-operator
# module at test-tools time, not committed. v0.85.0 is the newest version of
# that module the Go module proxy serves here.
PROMETHEUS_OPERATOR_MODULE="github.com/prometheus-operator/prometheus-operator"
PROMETHEUS_OPERATOR_VERSION="v0.85.0"
PODMONITOR_CRD_DIR="$TOOLS_DIR/share/prometheus-operator-$PROMETHEUS_OPERATOR_VERSION"
# Simulated nodes for `make scale` (sigs.k8s.io/kwok; the proxy lists v0.6.1-v0.8.0;
# v0.8.0 installs too, make scale was measured with v0.7.0).
KWOK_VERSION="v0.7.0"

log() { printf 'tools: %s\n' "$*"; }
mkdir -p "$BIN"

install_debian_packages() {
  local missing=()
  for pkg in "${DEBIAN_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  if ((${#missing[@]} == 0)); then
    log "debian packages present"
    return
  fi
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # Another lane of hack/setup.sh may hold the dpkg lock: wait for it.
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # The packages start their own services; tests start private instances instead.
  for svc in etcd mariadb postgresql prometheus; do
    service "$svc" stop >/dev/null 2>&1 || true
  done
}

k8s_stamp() {
  # The stamp changes whenever the pinned module graph or the version does.
  cat "$ROOT/hack/k8s/go.mod" "$ROOT/hack/k8s/go.sum" | sha256sum | cut -c1-16
}

build_kubernetes() {
  local stamp_file="$BIN/.kubernetes-$K8S_VERSION" stamp
  stamp="$(k8s_stamp)"
  if [[ -f "$stamp_file" && "$(cat "$stamp_file")" == "$stamp" ]]; then
    local all=1
    for cmd in "${K8S_CMDS[@]}"; do [[ -x "$BIN/$cmd" ]] || all=0; done
    if ((all)); then
      log "kubernetes $K8S_VERSION present"
      return
    fi
  fi
  log "building kubernetes $K8S_VERSION (first build downloads ~700 MB of modules)"
  local minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
  local ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION"
  ldflags+=" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
  ldflags+=" -X k8s.io/component-base/version.gitTreeState=clean"
  local pkgs=()
  for cmd in "${K8S_CMDS[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$cmd"); done
  (cd "$ROOT/hack/k8s" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$BIN/" "${pkgs[@]}")
  echo "$stamp" >"$stamp_file"
}

# Helm's Makefile stamps the Kubernetes version it was built against (used as
# the default for `helm template` and lint); `go install` must do the same or
# helm assumes v1.20 and rejects charts that require a current cluster.
install_helm() {
  once helm "$HELM_VERSION-k8s-$K8S_VERSION" _install_helm
}
_install_helm() {
  log "installing helm $HELM_VERSION"
  local minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
  local ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
  for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
    ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$minor"
  done
  GOBIN="$BIN" CGO_ENABLED=0 go install -ldflags "$ldflags" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
}

link_etcd() {
  # Debian's etcd-server. Not `command -v` first: make puts $BIN itself first on
  # PATH, and the link then pointed at itself ("Too many levels of symbolic links").
  local etcd=/usr/bin/etcd
  [[ -x "$etcd" ]] || etcd="$(PATH="${PATH//$BIN:/}" command -v etcd || true)"
  [[ -n "$etcd" && "$etcd" != "$BIN/etcd" ]] || { log "etcd not found"; exit 1; }
  ln -sf "$etcd" "$BIN/etcd"
}

# once: build a tool only when its pinned inputs change.
# shellcheck source=hack/stamps.sh
source "$ROOT/hack/stamps.sh"

# debian_mirror: the machine's own apt mirror (hack/debian-mirror.sh).
# shellcheck source=hack/debian-mirror.sh
source "$ROOT/hack/debian-mirror.sh"

build_mysql_root() {
  local stamp_file="$MYSQL_ROOT/.dbbench-root" stamp="$MYSQL_SUITE $MYSQL_ROOT_PACKAGES"
  if [[ -f "$stamp_file" && "$(cat "$stamp_file")" == "$stamp" && -x "$MYSQL_ROOT/usr/sbin/mysqld" ]]; then
    log "mysql root ($MYSQL_SUITE: $MYSQL_ROOT_PACKAGES) present"
    return
  fi
  if ! command -v debootstrap >/dev/null; then
    log "installing debootstrap"
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
      --no-install-recommends debootstrap >/dev/null
  fi
  local mirror staging="$MYSQL_ROOT.partial"
  mirror="$(debian_mirror)" || exit 1
  log "building the mysql root from $MYSQL_SUITE at $mirror (~650 MB)"
  # --one-file-system: never descend into a /proc or /sys a failed run left mounted.
  rm -rf --one-file-system "$staging" "$MYSQL_ROOT"
  debootstrap --variant=minbase --include="$MYSQL_ROOT_PACKAGES" \
    "$MYSQL_SUITE" "$staging" "$mirror" >"$TOOLS_DIR/mysql-root.log" 2>&1 || {
    tail -20 "$TOOLS_DIR/mysql-root.log"
    exit 1
  }
  rm -rf "$staging/var/cache/apt/archives/"*.deb
  echo "$stamp" >"$staging/.dbbench-root"
  mv "$staging" "$MYSQL_ROOT"
  log "mysql root: $(chroot "$MYSQL_ROOT" mysqld --version)"
}

build_ferretdb() {
  once ferretdb "$FERRETDB_VERSION-$(sha256sum "$FERRETDB_PATCH" | cut -c1-16)" _build_ferretdb
}
_build_ferretdb() {
  log "building ferretdb $FERRETDB_VERSION (patched: $(basename "$FERRETDB_PATCH"))"
  # `go install module@version` fails here (the proxy refuses the version list
  # it reads for deprecation notices); downloading the module works.
  local source work
  source="$(go mod download -json "$FERRETDB_MODULE@$FERRETDB_VERSION" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [[ -d "$source" ]] || { log "go mod download gave no module directory"; exit 1; }
  work="$(mktemp -d)"
  cp -r "$source/." "$work"
  chmod -R u+w "$work"
  # Without it the binary panics: "Invalid build/version/version.txt".
  echo "$FERRETDB_VERSION" >"$work/build/version/version.txt"
  patch --quiet -p1 -d "$work" <"$FERRETDB_PATCH"
  (cd "$work" && CGO_ENABLED=0 go build -trimpath -o "$BIN/ferretdb" ./cmd/ferretdb)
  rm -rf "$work"
}

build_dashboard_check() {
  once dashboard-check "$(cat "$DASHBOARD_CHECK_DIR"/go.mod "$DASHBOARD_CHECK_DIR"/go.sum \
    "$DASHBOARD_CHECK_DIR"/*.go | sha256sum | cut -c1-16)" _build_dashboard_check
}
_build_dashboard_check() {
  log "building dashboard-check (Grafana Foundation SDK, about a minute the first time)"
  (cd "$DASHBOARD_CHECK_DIR" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$BIN/dashboard-check" .)
}

fetch_podmonitor_crd() {
  local crd="$PODMONITOR_CRD_DIR/monitoring.coreos.com_podmonitors.yaml" source
  if [[ -f "$crd" ]]; then
    log "podmonitor crd $PROMETHEUS_OPERATOR_VERSION present"
    return
  fi
  log "taking the PodMonitor CRD from $PROMETHEUS_OPERATOR_MODULE $PROMETHEUS_OPERATOR_VERSION (4 MB module)"
  # Outside any go.mod: a plain download into the module cache, checksum-verified.
  source="$(cd /tmp && go mod download -json "$PROMETHEUS_OPERATOR_MODULE@$PROMETHEUS_OPERATOR_VERSION" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [[ -d "$source" ]] || { log "go mod download gave no module directory"; exit 1; }
  mkdir -p "$PODMONITOR_CRD_DIR"
  # The CRD file and the module's licence (Apache-2.0) travel together.
  cp "$source/LICENSE" "$PODMONITOR_CRD_DIR/LICENSE"
  cp "$source/example/prometheus-operator-crd/monitoring.coreos.com_podmonitors.yaml" "$crd.partial"
  chmod u+w "$crd.partial" "$PODMONITOR_CRD_DIR/LICENSE"
  mv "$crd.partial" "$crd"
}

install_kwok() {
  once kwok "$KWOK_VERSION" _install_kwok
}
_install_kwok() {
  log "installing kwok $KWOK_VERSION (about 3 minutes the first time)"
  (cd /tmp && GOBIN="$BIN" CGO_ENABLED=0 go install "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION")
}

steps=("$@")
((${#steps[@]})) || steps=("${DEFAULT_STEPS[@]}")
for step in "${steps[@]}"; do
  case "$step" in
    debian) install_debian_packages && link_etcd ;;
    kubernetes) build_kubernetes ;;
    helm) install_helm ;;
    mysql) build_mysql_root ;;
    ferretdb) build_ferretdb ;;
    dashboard-check) build_dashboard_check ;;
    podmonitor-crd) fetch_podmonitor_crd ;;
    kwok) install_kwok ;;
    *) log "unknown step '$step' (debian kubernetes helm mysql ferretdb dashboard-check podmonitor-crd kwok)"; exit 2 ;;
  esac
done
log "ready in $BIN"
