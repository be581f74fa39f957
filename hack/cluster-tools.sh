#!/usr/bin/env bash
# What the local single-node cluster needs beyond `make tools`: a container
# runtime and CNI plugins from Debian, CoreDNS and the local-path provisioner
# from the Go module proxy. Idempotent: present tools are skipped.
#
# Usage: hack/cluster-tools.sh [STEP...]   STEP in: debian go (default: both;
# hack/setup.sh runs them in different lanes so the Go builds overlap apt).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS_DIR="${TOOLS_DIR:-$ROOT/.tools}"
BIN="$TOOLS_DIR/bin"
COREDNS_VERSION="v1.11.3"
LOCAL_PATH_VERSION="v0.0.30"  # the newest the Go proxy serves for `go install`
KIND_VERSION="v0.30.0"
DEBIAN_PACKAGES=(containerd runc containernetworking-plugins iptables conntrack
  podman debootstrap busybox-static gcc libc6-dev)

log() { printf 'cluster-tools: %s\n' "$*"; }
mkdir -p "$BIN"

if [[ "${DBBENCH_CLUSTER:-}" == kind ]] || { [[ -z "${DBBENCH_CLUSTER:-}" ]] && docker info >/dev/null 2>&1; }; then
  # A container engine answers: the cluster is kind, no runtime of our own.
  KIND_ONLY=1
else
  KIND_ONLY=0
fi

install_debian_packages() {
  local missing=() pkg
  for pkg in "${DEBIAN_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  if ((${#missing[@]} == 0)); then
    return
  fi
  log "installing ${missing[*]} from Debian"
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # Debian starts containerd as a service; the local node runs its own instance.
  service containerd stop >/dev/null 2>&1 || true
}

go_tool() {  # name module version
  local stamp="$BIN/.$1-$3"
  if [[ -x "$BIN/$1" && -f "$stamp" ]]; then
    log "$1 $3 present"
    return
  fi
  log "building $1 $3 (about 2 minutes the first time)"
  (cd /tmp && GOBIN="$BIN" CGO_ENABLED=0 go install "$2@$3")
  touch "$stamp"
}

build_go_tools() {
  if ((KIND_ONLY)); then
    go_tool kind sigs.k8s.io/kind "$KIND_VERSION"
  else
    go_tool coredns github.com/coredns/coredns "$COREDNS_VERSION"
    go_tool local-path-provisioner github.com/rancher/local-path-provisioner "$LOCAL_PATH_VERSION"
  fi
}

((KIND_ONLY)) && DEBIAN_PACKAGES=()
steps=("$@")
((${#steps[@]})) || steps=(debian go)
for step in "${steps[@]}"; do
  case "$step" in
    debian) install_debian_packages ;;
    go) build_go_tools ;;
    *) log "unknown step '$step' (debian go)"; exit 2 ;;
  esac
done
