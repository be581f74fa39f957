#!/usr/bin/env bash
# Builds a kind node image here, with no registry: kind's own base-image and
# node-image recipes (sigs.k8s.io/kind v0.30.0: images/base/Dockerfile and
# pkg/build/nodeimage) carried out with Debian packages, the Kubernetes
# binaries `make tools` builds and the Go tools `make cluster-tools` builds.
#
#   hack/cluster/kind-node-image.sh          # node image + the archives it holds
#
# Output: the podman image $REF_NODE (what `kind create cluster --image`
# takes), plus OCI archives of the images preloaded into the node's containerd
# in ${DBBENCH_IMAGES_DIR:-.cluster/images}/kind/. Each carries a stamp of what
# it is built from; a re-run without changes only compares stamps.
#
# What differs from kindest/node, and why (docs/local-cluster.md, "kind"):
# - containerd, runc and the CNI plugins are trixie's packages (kind builds
#   newer releases from source); crictl, etcd and CoreDNS come from their Go
#   modules at the versions kubeadm v1.34.4 asks for (CoreDNS v1.12.1, etcd
#   3.6.5); kube-apiserver & co. are the binaries of `make tools`.
# - the control-plane images are the static binaries on an empty root
#   (upstream: distroless); kube-proxy's is a trixie root with iptables and
#   conntrack (upstream: distroless-iptables), with an iptables wrapper.
# - the default CNI is kind-node/default-cni.yaml (ptp + host-local on each
#   node's pod CIDR, routes to the other nodes' CIDRs) instead of kindnet, whose module the Go proxy does not serve; the
#   default storage is kind's manifest with local-path-provisioner v0.0.30 and
#   busybox as helper.
# - this VM lacks CAP_SYS_RESOURCE: containerd runs with
#   restrict_oom_score_adj and without raised rlimits (kind-node/files).
# - no fuse-overlayfs, nfs-common or open-iscsi (rootless and storage tests).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# The helpers (debootstrap_root, in_root, import_dir, save, digest_of, ...).
# shellcheck source=hack/cluster/images.sh
source "$REPO/hack/cluster/images.sh"
KIND_DIR=$REPO/hack/cluster/kind-node
KIND_OUT=$OUT/kind
BIN=$TOOLS_DIR/bin
K8S_VERSION=$(sed -n 's/^K8S_VERSION="\(.*\)"$/\1/p' "$REPO/hack/tools.sh")
# kubeadm v1.34.4's defaults (cmd/kubeadm/app/constants): the node serves them.
ETCD_TAG=3.6.5-0
COREDNS_TAG=v1.12.1
LOCAL_PATH_VERSION=$(sed -n 's/^LOCAL_PATH_VERSION="\(.*\)".*/\1/p' "$REPO/hack/cluster-tools.sh")

REF_NODE=localhost/dbbench/kind-node:$K8S_VERSION
REF_PROVISIONER=localhost/dbbench/kind-local-path-provisioner:$LOCAL_PATH_VERSION
NODE_PACKAGES=systemd,dbus,conntrack,iptables,nftables,iproute2,ethtool,util-linux,mount,kmod,libseccomp2,pigz,e2fsprogs,bash,ca-certificates,curl,jq,procps,containerd,runc,containernetworking-plugins

# images.sh's save without its manifest.txt: the node's images are not the pods'.
save_kind() {
  local name=$1 ref=$2 key=$3 id
  id=$(podman image inspect --format '{{.Id}}' "$ref")
  if [[ -n $PREVIOUS_ID && $PREVIOUS_ID != "$id" ]]; then
    podman rmi "$PREVIOUS_ID" >/dev/null 2>&1 || true
  fi
  rm -f "$KIND_OUT/$name.tar" "$KIND_OUT/$name.stamp"
  podman save --quiet --format oci-archive -o "$KIND_OUT/$name.tar.part" "$ref"
  mv "$KIND_OUT/$name.tar.part" "$KIND_OUT/$name.tar"
  printf '%s\n' "$key" >"$KIND_OUT/$name.stamp"
  log "$KIND_OUT/$name.tar ($(du -h "$KIND_OUT/$name.tar" | cut -f1)) = $ref"
}

need_tool() {
  [[ -x $BIN/$1 ]] || die "no $1 in $BIN: run \`DBBENCH_CLUSTER=kind make cluster-tools\`"
}

# A static binary on an otherwise empty root, on PATH as in the upstream image.
build_binary_image() {
  local name=$1 binary=$2 ref=$3 dest=${4:-/usr/local/bin} key dir
  key=$(digest_of "$binary" "$dest" v1)
  if is_fresh "kind/$name" "$key"; then log "kind/$name: current ($ref)"; return; fi
  dir=$(mktemp -d)
  mkdir -p "$dir$dest" "$dir/etc" "$dir/tmp"
  chmod 1777 "$dir/tmp"
  install -m 0755 "$binary" "$dir$dest/$(basename "$binary")"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$dir/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\n' >"$dir/etc/group"
  shift 4 || shift $#
  remember "$ref"
  import_dir "$dir" "$ref" 'ENV PATH=/usr/local/bin:/usr/bin:/bin' "$@"
  rm -rf "$dir"
  save_kind "$name" "$ref" "$key"
}

kube_proxy_setup() {
  local root=$1
  install -m 0755 "$KIND_DIR/iptables-wrapper" "$root/usr/sbin/iptables-wrapper"
  local cmd
  for cmd in iptables ip6tables; do
    in_root "$root" update-alternatives --install "/usr/sbin/$cmd" "$cmd" /usr/sbin/iptables-wrapper 100 \
      --slave "/usr/sbin/$cmd-restore" "$cmd-restore" /usr/sbin/iptables-wrapper \
      --slave "/usr/sbin/$cmd-save" "$cmd-save" /usr/sbin/iptables-wrapper
  done
}

build_kube_proxy() {
  debootstrap_root kind-kube-proxy iptables,conntrack,kmod kube_proxy_setup
  local root=$ROOTS/kind-kube-proxy ref=registry.k8s.io/kube-proxy:$K8S_VERSION key
  key=$(digest_of "$(<"$root.stamp")" "$BIN/kube-proxy" v1)
  if is_fresh kind/kube-proxy "$key"; then log "kind/kube-proxy: current ($ref)"; return; fi
  install -m 0755 "$BIN/kube-proxy" "$root/usr/local/bin/kube-proxy"
  # The wrapper re-points the alternatives when it runs: a root it ran in
  # (a test) must start from the wrapper again.
  local cmd
  for cmd in iptables ip6tables; do
    chroot "$root" update-alternatives --set "$cmd" /usr/sbin/iptables-wrapper >/dev/null
  done
  remember "$ref"
  import_dir "$root" "$ref"
  save_kind kube-proxy "$ref" "$key"
}

# The images kubeadm's control plane, kind's CNI and storage run, as archives.
build_node_images() {
  local cmd
  for cmd in kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubelet kubeadm kubectl \
    etcd-kind coredns-kind crictl local-path-provisioner; do
    need_tool "$cmd"
  done
  mkdir -p "$KIND_OUT"
  for cmd in kube-apiserver kube-controller-manager kube-scheduler; do
    build_binary_image "$cmd" "$BIN/$cmd" "registry.k8s.io/$cmd:$K8S_VERSION"
  done
  build_etcd_image
  build_coredns_image
  build_binary_image local-path-provisioner "$BIN/local-path-provisioner" "$REF_PROVISIONER"
  build_kube_proxy
  # pause (containerd's sandbox_image) and busybox (storage helper, CNI writer):
  # the archives of images.sh.
  build_pause
  build_busybox
}

build_etcd_image() {
  local dir key ref=registry.k8s.io/etcd:$ETCD_TAG
  key=$(digest_of "$BIN/etcd-kind" v1)
  if is_fresh kind/etcd "$key"; then log "kind/etcd: current ($ref)"; return; fi
  dir=$(mktemp -d)
  mkdir -p "$dir/usr/local/bin" "$dir/tmp" "$dir/etc"
  chmod 1777 "$dir/tmp"
  install -m 0755 "$BIN/etcd-kind" "$dir/usr/local/bin/etcd"
  printf 'root:x:0:0:root:/root:/sbin/nologin\n' >"$dir/etc/passwd"
  remember "$ref"
  import_dir "$dir" "$ref" 'ENV PATH=/usr/local/bin:/usr/bin:/bin'
  rm -rf "$dir"
  save_kind etcd "$ref" "$key"
}

build_coredns_image() {
  local dir key ref=registry.k8s.io/coredns/coredns:$COREDNS_TAG
  key=$(digest_of "$BIN/coredns-kind" v1)
  if is_fresh kind/coredns "$key"; then log "kind/coredns: current ($ref)"; return; fi
  dir=$(mktemp -d)
  mkdir -p "$dir/etc" "$dir/tmp"
  chmod 1777 "$dir/tmp"
  install -m 0755 "$BIN/coredns-kind" "$dir/coredns"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$dir/etc/passwd"
  remember "$ref"
  import_dir "$dir" "$ref" 'ENTRYPOINT ["/coredns"]' 'EXPOSE 53'
  rm -rf "$dir"
  save_kind coredns "$ref" "$key"
}

# kind's base image: the packages of images/base/Dockerfile and its files.
node_setup() {
  local root=$1
  # As the Dockerfile: only the units kind enables start.
  find "$root/lib/systemd/system/sysinit.target.wants/" -name systemd-tmpfiles-setup.service -delete
  rm -f "$root"/lib/systemd/system/multi-user.target.wants/* "$root"/etc/systemd/system/*.wants/* \
    "$root"/lib/systemd/system/local-fs.target.wants/* "$root"/lib/systemd/system/sockets.target.wants/*udev* \
    "$root"/lib/systemd/system/sockets.target.wants/*initctl* "$root"/lib/systemd/system/basic.target.wants/*
  echo "ReadKMsg=no" >>"$root/etc/systemd/journald.conf"
  ln -sf /usr/lib/systemd/systemd "$root/sbin/init"
  # Debian installs the CNI plugins in /usr/lib/cni; containerd looks in /opt/cni/bin.
  mkdir -p "$root/opt/cni"
  ln -sfn /usr/lib/cni "$root/opt/cni/bin"
}

install_node_files() {
  local root=$1 f
  (cd "$KIND_DIR/files" && find . -type f) | while read -r f; do
    case $f in
      ./usr/local/bin/* | ./kind/bin/*) install -D -m 0755 "$KIND_DIR/files/$f" "$root/$f" ;;
      *) install -D -m 0644 "$KIND_DIR/files/$f" "$root/$f" ;;
    esac
  done
  chmod 755 "$root/kind" "$root/kind/bin"
  # containerd's default spec with the product-files hook and no rlimits.
  in_root "$root" sh -c 'ctr oci spec | jq ".hooks.createContainer[.hooks.createContainer| length] |= . + {\"path\": \"/kind/bin/mount-product-files.sh\"}" | jq "del(.process.rlimits)" >/etc/containerd/cri-base.json'
  in_root "$root" systemctl enable kubelet.service containerd.service undo-mount-hacks.service
  in_root "$root" systemctl mask systemd-binfmt.service
  mkdir -p "$root/etc/kubernetes/manifests"
  # What kind's node-image build adds (pkg/build/nodeimage/buildcontext.go).
  local cmd
  for cmd in kubeadm kubelet kubectl; do install -m 0755 "$BIN/$cmd" "$root/usr/bin/$cmd"; done
  install -m 0755 "$BIN/crictl" "$root/usr/local/bin/crictl"
  printf '%s' "$K8S_VERSION" >"$root/kind/version"
  mkdir -p "$root/kind/manifests"
  sed -e "s#@CNI_IMAGE@#$REF_BUSYBOX#" "$KIND_DIR/default-cni.yaml" >"$root/kind/manifests/default-cni.yaml"
  sed -e "s#@PROVISIONER_IMAGE@#$REF_PROVISIONER#" -e "s#@HELPER_IMAGE@#$REF_BUSYBOX#" \
    "$KIND_DIR/default-storage.yaml" >"$root/kind/manifests/default-storage.yaml"
}

# As kind's imageimporter: containerd in the node's root imports the archives
# (pinned, not unpacked) into its /var/lib/containerd, which the node's /var
# volume is created from.
preload_images() {
  local root=$1
  shift
  rm -rf "$root/var/lib/containerd"
  unshare --mount --propagation private -- bash -ec '
    root=$1 dir=$2; shift 2
    mount -t proc proc "$root/proc"
    mount --rbind /dev "$root/dev"
    mount -t tmpfs tmpfs "$root/run"
    mount -t tmpfs tmpfs "$root/tmp"
    mkdir -p "$root/tmp/images"
    mount --bind "$dir" "$root/tmp/images"
    printf "version = 2\n" >"$root/tmp/containerd.toml"
    chroot "$root" /usr/bin/containerd --config /tmp/containerd.toml >"$root/tmp/containerd.log" 2>&1 &
    pid=$!
    trap "kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true" EXIT
    for _ in $(seq 100); do chroot "$root" ctr version >/dev/null 2>&1 && break; sleep 0.2; done
    for archive; do
      chroot "$root" ctr --namespace=k8s.io images import --label=io.cri-containerd.pinned=pinned \
        --all-platforms --no-unpack --digests "/tmp/images/$archive" >/dev/null
    done
    chroot "$root" ctr --namespace=k8s.io images list -q' preload "$root" "$KIND_OUT/.." "$@"
}

build_node() {
  build_node_images
  debootstrap_root kind-node "$NODE_PACKAGES" node_setup
  local root=$ROOTS/kind-node key archives=() name
  for name in kube-apiserver kube-controller-manager kube-scheduler kube-proxy etcd coredns local-path-provisioner; do
    archives+=("kind/$name.tar")
  done
  archives+=(pause.tar busybox.tar)
  local stamps=()
  for name in "${archives[@]}"; do stamps+=("$(<"$OUT/${name%.tar}.stamp")"); done
  key=$(digest_of "$(<"$root.stamp")" "$KIND_DIR" "$BIN/kubeadm" "$BIN/kubelet" "$BIN/kubectl" \
    "$BIN/crictl" "${stamps[*]}" v1)
  if [[ -f $KIND_OUT/node.stamp && $(<"$KIND_OUT/node.stamp") == "$key" ]] && podman image exists "$REF_NODE"; then
    log "kind node: current ($REF_NODE)"
    printf '%s\n' "$REF_NODE" >"$KIND_OUT/node-image.txt"
    return
  fi
  log "kind node: files, binaries and ${#archives[@]} preloaded images into the root"
  install_node_files "$root"
  preload_images "$root" "${archives[@]}"
  remember "$REF_NODE"
  # As kind's base and node images: systemd knows it runs in a container and
  # stops on SIGRTMIN+3; the entrypoint prepares mounts and cgroups first.
  import_dir "$root" "$REF_NODE" 'ENV container=docker' 'STOPSIGNAL SIGRTMIN+3' \
    'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]'
  rm -rf "$root/var/lib/containerd"
  if [[ -n $PREVIOUS_ID && $PREVIOUS_ID != "$(podman image inspect --format '{{.Id}}' "$REF_NODE")" ]]; then
    podman rmi "$PREVIOUS_ID" >/dev/null 2>&1 || true
  fi
  printf '%s\n' "$key" >"$KIND_OUT/node.stamp"
  # What hack/dbbench_local/kind.py passes to `kind create cluster --image`.
  printf '%s\n' "$REF_NODE" >"$KIND_OUT/node-image.txt"
  log "kind node: $REF_NODE ($(podman image inspect --format '{{.Size}}' "$REF_NODE" | numfmt --to=iec))"
}

kind_main() {
  [[ $(id -u) == 0 ]] || die "run as root (debootstrap, chroot and podman's store need it)"
  ensure_packages
  MIRROR=$(debian_mirror) || exit 1
  mkdir -p "$OUT" "$ROOTS" "$KIND_OUT"
  exec 9>"$ROOTS/.kind-lock"
  flock -n 9 || { log "waiting for another kind-node-image.sh run to finish"; flock 9; }
  timed "kind node image $REF_NODE" build_node
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then kind_main "$@"; fi
