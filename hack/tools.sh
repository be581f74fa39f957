#!/usr/bin/env bash
# Build or install every tool the tests need, from package registries only.
#
# Idempotent: each tool is skipped when the pinned version is already in
# $TOOLS_DIR/bin, so a second run takes seconds. Nothing is downloaded from
# outside the Debian archive, PyPI and the Go module proxy.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS_DIR="${TOOLS_DIR:-$ROOT/.tools}"
BIN="$TOOLS_DIR/bin"
K8S_VERSION="v1.34.4"
HELM_VERSION="v3.19.0"
K8S_CMDS=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)
# libmariadb-dev + pkg-config: the runner's mysqlclient driver compiles against them.
DEBIAN_PACKAGES=(etcd-server mariadb-server mariadb-client sysbench libmariadb-dev pkg-config)

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
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # The packages start their own services; tests start private instances instead.
  for svc in etcd mariadb; do
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

install_helm() {
  # Helm's Makefile stamps the Kubernetes version it was built against (used as
  # the default for `helm template` and lint); `go install` must do the same or
  # helm assumes v1.20 and rejects charts that require a current cluster.
  local stamp_file="$BIN/.helm-$HELM_VERSION-k8s-$K8S_VERSION"
  if [[ -x "$BIN/helm" && -f "$stamp_file" ]]; then
    log "helm $HELM_VERSION present"
    return
  fi
  log "installing helm $HELM_VERSION"
  local minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
  local ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
  for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
    ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$minor"
  done
  GOBIN="$BIN" CGO_ENABLED=0 go install -ldflags "$ldflags" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
  touch "$stamp_file"
}

link_etcd() {
  local etcd
  etcd="$(command -v etcd || true)"
  [[ -n "$etcd" ]] || etcd=/usr/bin/etcd
  ln -sf "$etcd" "$BIN/etcd"
}

install_debian_packages
link_etcd
build_kubernetes
install_helm
log "ready in $BIN"
