"""Configuration of the local node: pure builders, no I/O.

One real node on this machine: containerd + runc with a bridge CNI, the
kubelet, kube-proxy (iptables), CoreDNS and the local-path provisioner as host
processes. Every address belongs to this machine: the node address is an extra
``/32`` on ``lo`` from the benchmarking range 198.18.0.0/15 (RFC 2544), pods
live on a private bridge, and DNS answers cluster names only (no ``forward``).
See docs/local-cluster.md for why each setting is what it is.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

NODE_NAME = "dbbench-node"
NODE_IP = "198.18.0.1"
POD_CIDR = "10.244.0.0/24"
BRIDGE = "dbbench0"
CLUSTER_DOMAIN = "cluster.local"
APISERVER_PORT = 6443
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
HELPER_IMAGE = "docker.io/library/busybox:1.36"
CNI_BIN_DIR = "/usr/lib/cni"
STORAGE_CLASS = "local-path"
LOCAL_PATH_NAMESPACE = "local-path-storage"
# The label a run's `hardware.nodeSelector` can match on the local node.
NODE_POOL_LABEL = "dbbench.io/node-pool"
NODE_POOL = "local"


@dataclass(frozen=True)
class NodePaths:
    """Where the node keeps its state: data under ``var``, sockets under ``run``."""

    var: Path  # /var/lib/dbbench-local
    run: Path  # /run/dbbench-local
    conf: Path  # generated configuration, next to the control plane's

    @property
    def containerd_root(self) -> Path:
        return self.var / "containerd"

    @property
    def containerd_socket(self) -> Path:
        return self.run / "containerd.sock"

    @property
    def kubelet_root(self) -> Path:
        return self.var / "kubelet"

    @property
    def volumes(self) -> Path:
        return self.var / "volumes"

    @property
    def cni_conf_dir(self) -> Path:
        return self.conf / "cni"

    @property
    def cni_state(self) -> Path:
        return self.var / "cni"


def containerd_config(paths: NodePaths) -> str:
    """containerd 1.6 CRI settings that work in this VM.

    restrict_oom_score_adj: the VM lacks CAP_SYS_RESOURCE, and without it every
    sandbox fails with "can't get final child's PID from pipe".
    """
    return f"""version = 2
root = "{paths.containerd_root}"
state = "{paths.run / "containerd-state"}"

[grpc]
  address = "{paths.containerd_socket}"

[ttrpc]
  address = "{paths.run / "containerd-ttrpc.sock"}"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{CNI_BIN_DIR}"
    conf_dir = "{paths.cni_conf_dir}"
"""


def cni_conflist(paths: NodePaths) -> str:
    """Bridge + host-local + portmap: enough for one node.

    No masquerading: pods only ever talk to this machine's own addresses.
    Hairpin mode lets a pod reach itself through its Service.
    """
    conflist = {
        "cniVersion": "0.4.0",
        "name": "dbbench",
        "plugins": [
            {
                "type": "bridge",
                "bridge": BRIDGE,
                "isGateway": True,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "dataDir": str(paths.cni_state),
                    "ranges": [[{"subnet": POD_CIDR}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }
    return json.dumps(conflist, indent=2) + "\n"


def kubelet_config(paths: NodePaths) -> dict[str, object]:
    """A kubelet without systemd on cgroup v1 or v2, serving on the node address only."""
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": NODE_IP,
        "port": 10250,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": 10248,
        # The API server reaches the kubelet for logs and exec; the kubelet
        # listens on the machine-local node address only.
        "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
        "authorization": {"mode": "AlwaysAllow"},
        "cgroupDriver": "cgroupfs",
        "cgroupsPerQOS": False,
        "enforceNodeAllocatable": [],
        "failSwapOn": False,
        "failCgroupV1": False,
        "evictionHard": {
            "memory.available": "100Mi",
            "nodefs.available": "1%",
            "nodefs.inodesFree": "1%",
            "imagefs.available": "1%",
        },
        # Imported images cannot be pulled again: never garbage-collect them.
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "clusterDNS": [NODE_IP],
        "clusterDomain": CLUSTER_DOMAIN,
        "resolvConf": "",
        "podCIDR": POD_CIDR,
        "containerRuntimeEndpoint": f"unix://{paths.containerd_socket}",
        "serializeImagePulls": False,
        "maxPods": 110,
        "syncFrequency": "10s",
    }


def kube_proxy_config(kubeconfig: Path) -> dict[str, object]:
    """iptables mode; conntrack sysctls left alone (the VM may refuse them)."""
    return {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "mode": "iptables",
        "clusterCIDR": POD_CIDR,
        "hostnameOverride": NODE_NAME,
        "bindAddress": NODE_IP,
        "healthzBindAddress": "127.0.0.1:10256",
        "metricsBindAddress": "127.0.0.1:10249",
        # Hairpin and host-to-ClusterIP traffic need the source rewritten.
        "iptables": {"masqueradeAll": True},
        "conntrack": {
            "maxPerCore": 0,
            "tcpEstablishedTimeout": "0s",
            "tcpCloseWaitTimeout": "0s",
        },
    }


def corefile(kubeconfig: Path) -> str:
    """Cluster names only: no ``forward`` block, so no query leaves the machine."""
    return f"""{CLUSTER_DOMAIN}:53 in-addr.arpa:53 ip6.arpa:53 {{
    bind {NODE_IP}
    errors
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
        kubeconfig {kubeconfig} admin
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }}
    cache 30
}}
"""


def local_path_config(paths: NodePaths) -> dict[str, object]:
    return {
        "nodePathMap": [
            {"node": "DEFAULT_PATH_FOR_NON_LISTED_NODES", "paths": [str(paths.volumes)]}
        ]
    }


# The helper pod's scripts, as in the provisioner's own deployment manifest.
_SETUP = 'set -eu\nmkdir -m 0777 -p "$VOL_DIR"\n'
_TEARDOWN = 'set -eu\nrm -rf "$VOL_DIR"\n'
_HELPER_POD = f"""apiVersion: v1
kind: Pod
metadata:
  name: helper-pod
spec:
  priorityClassName: system-node-critical
  tolerations:
    - key: node.kubernetes.io/disk-pressure
      operator: Exists
      effect: NoSchedule
  containers:
    - name: helper-pod
      image: {HELPER_IMAGE}
      imagePullPolicy: Never
"""


def storage_manifests(paths: NodePaths) -> list[dict[str, object]]:
    """Namespace, provisioner ConfigMap and the default StorageClass."""
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": LOCAL_PATH_NAMESPACE}},
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "local-path-config", "namespace": LOCAL_PATH_NAMESPACE},
            "data": {
                "config.json": json.dumps(local_path_config(paths)),
                "setup": _SETUP,
                "teardown": _TEARDOWN,
                "helperPod.yaml": _HELPER_POD,
            },
        },
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {
                "name": STORAGE_CLASS,
                "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
            },
            "provisioner": "rancher.io/local-path",
            "volumeBindingMode": "WaitForFirstConsumer",
            "reclaimPolicy": "Delete",
        },
    ]
