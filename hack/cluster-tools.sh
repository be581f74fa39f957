#!/usr/bin/env bash
# What the local single-node cluster needs beyond `make tools`: a container
# runtime and CNI plugins from Debian, CoreDNS and the local-path provisioner
# from the Go module proxy. Idempotent: present tools are skipped.
#
# kind (DBBENCH_CLUSTER=kind, or a Docker engine answering): kind itself; and
# through podman (no Docker engine), what hack/cluster/kind-node-image.sh puts
# in the node image besides `make tools`' Kubernetes binaries: crictl, and
# etcd and CoreDNS at the versions kubeadm asks for.
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
# kubeadm v1.34.4's defaults (cmd/kubeadm/app/constants: etcd 3.6.5-0, CoreDNS
# v1.12.1); crictl as close to kind v0.30.0's v1.33.0 as the Go proxy serves.
KIND_ETCD_VERSION="v3.6.5"
KIND_COREDNS_VERSION="v1.12.1"
CRICTL_VERSION="v1.34.0"
DEBIAN_PACKAGES=(containerd runc containernetworking-plugins iptables conntrack
  podman debootstrap busybox-static gcc libc6-dev)

log() { printf 'cluster-tools: %s\n' "$*"; }
mkdir -p "$BIN"

# The same choice as hack/dbbench_local/cluster.py (images_recipe).
KIND_ONLY=0    # kind on Docker: kind only, no runtime of our own
KIND_PODMAN=0  # kind on podman: the local node's tools, plus the node image's
if docker info >/dev/null 2>&1; then
  [[ "${DBBENCH_CLUSTER:-}" == local ]] || KIND_ONLY=1
elif [[ "${DBBENCH_CLUSTER:-}" == kind ]]; then
  KIND_PODMAN=1
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

# shellcheck source=hack/stamps.sh
source "$ROOT/hack/stamps.sh"

go_tool() {  # name module version
  once "$1" "$3" _go_install "$1" "$2" "$3"
}
_go_install() {  # name module version
  log "building $1 $3 (about 2 minutes the first time)"
  (cd /tmp && GOBIN="$BIN" CGO_ENABLED=0 go install "$2@$3")
}

# go_tool under another name (a second version beside the local node's).
go_tool_as() {  # name module version
  once "$1" "$3" _go_install_as "$1" "$2" "$3"
}
_go_install_as() {  # name module version
  local gobin
  log "building $1 ($2 $3; about 2 minutes the first time)"
  gobin="$(mktemp -d)"
  (cd /tmp && GOBIN="$gobin" CGO_ENABLED=0 go install "$2@$3")
  mv "$gobin"/* "$BIN/$1"
  rmdir "$gobin"
}

# etcd's server module has replace directives, which `go install module@version`
# refuses: build it from a throw-away module that requires it.
build_kind_etcd() {
  once etcd-kind "$KIND_ETCD_VERSION" _build_kind_etcd
}
_build_kind_etcd() {
  local work
  log "building etcd $KIND_ETCD_VERSION for the kind node (about 2 minutes the first time)"
  work="$(mktemp -d)"
  (cd "$work" && go mod init dbbench.io/kind-etcd >/dev/null 2>&1 &&
    go get "go.etcd.io/etcd/server/v3@$KIND_ETCD_VERSION" &&
    CGO_ENABLED=0 go build -trimpath -o "$BIN/etcd-kind" go.etcd.io/etcd/server/v3)
  rm -rf "$work"
}

# kubeadm from the same pinned module graph as `make tools`' Kubernetes build
# (hack/k8s), in a copy: kubeadm needs two more modules in go.sum, and changing
# hack/k8s would rebuild every Kubernetes binary of the local node.
build_kubeadm() {
  local k8s_version
  k8s_version="$(sed -n 's/^K8S_VERSION="\(.*\)"$/\1/p' "$ROOT/hack/tools.sh")"
  once kubeadm "$k8s_version-$(cat "$ROOT/hack/k8s/go.mod" "$ROOT/hack/k8s/go.sum" | sha256sum | cut -c1-16)" \
    _build_kubeadm "$k8s_version"
}
_build_kubeadm() {  # kubernetes-version
  local k8s_version="$1" work minor ldflags
  log "building kubeadm $k8s_version (about 5 minutes the first time)"
  work="$(mktemp -d)"
  cp "$ROOT/hack/k8s/go.mod" "$ROOT/hack/k8s/go.sum" "$work/"
  minor="${k8s_version#v1.}"; minor="${minor%%.*}"
  ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$k8s_version"
  ldflags+=" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
  ldflags+=" -X k8s.io/component-base/version.gitTreeState=clean"
  (cd "$work" && go get "k8s.io/kubernetes/cmd/kubeadm@$k8s_version" &&
    CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$BIN/kubeadm" k8s.io/kubernetes/cmd/kubeadm)
  rm -rf "$work"
}

build_go_tools() {
  if ((KIND_ONLY)); then
    go_tool kind sigs.k8s.io/kind "$KIND_VERSION"
    return
  fi
  go_tool coredns github.com/coredns/coredns "$COREDNS_VERSION"
  go_tool local-path-provisioner github.com/rancher/local-path-provisioner "$LOCAL_PATH_VERSION"
  if ((KIND_PODMAN)); then
    go_tool kind sigs.k8s.io/kind "$KIND_VERSION"
    build_kubeadm
    go_tool crictl sigs.k8s.io/cri-tools/cmd/crictl "$CRICTL_VERSION"
    go_tool_as coredns-kind github.com/coredns/coredns "$KIND_COREDNS_VERSION"
    build_kind_etcd
  fi
}

((KIND_ONLY)) && DEBIAN_PACKAGES=()
# kind through podman: a worker joins the control plane by its container name,
# which podman's CNI network backend (Debian's podman 4.3) resolves only with
# the dnsname plugin (docs/local-cluster.md, "Several nodes").
((KIND_PODMAN)) && DEBIAN_PACKAGES+=(golang-github-containernetworking-plugin-dnsname)
steps=("$@")
((${#steps[@]})) || steps=(debian go)
for step in "${steps[@]}"; do
  case "$step" in
    debian) install_debian_packages ;;
    go) build_go_tools ;;
    *) log "unknown step '$step' (debian go)"; exit 2 ;;
  esac
done
