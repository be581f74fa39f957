"""kind: a Kubernetes node in a container, through Docker or podman.

The same interface as the local node (``up``, ``down``, ``healthy``,
``import_images``, ``kubeconfig``), in two variants:

- **docker** (a user's laptop): kind's upstream node image, the operator and
  runner built with ``docker build`` (hack/cluster/kind-images.sh) and loaded
  with ``kind load docker-image``; the node pulls the official database images.
- **podman** (no registry, e.g. the development machines): the node image
  built here (hack/cluster/kind-node-image.sh) and every archive of
  hack/cluster/images.sh loaded with ``kind load image-archive``.

Either way CoreDNS answers cluster names only (its ``forward`` block goes):
tests must not send queries off the machine (docs/local-cluster.md).

``DBBENCH_NODES`` nodes (default one): a control plane and workers labelled
and tainted as node pools (``kind_pools.py``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from dbbench_local.controlplane import REPO, tool
from dbbench_local.kind_pools import KIND_NAME, HostSize, count_problem, kind_config

# podman's defaults raise RLIMIT_NOFILE/NPROC, which needs CAP_SYS_RESOURCE;
# this file drops them (dev-machine.md). Used for every podman command kind runs.
CONTAINERS_CONF = REPO / "hack" / "cluster" / "containers.conf"
# kind names its container network "kind", for all its clusters.
KIND_NETWORK = "kind"


def docker_answers() -> bool:
    """A Docker engine that answers (kind's default provider)."""
    if shutil.which("docker") is None:
        return False
    probe = subprocess.run(["docker", "info"], capture_output=True, check=False, timeout=30)
    return probe.returncode == 0


# The name the cluster choice has always used.
engine_available = docker_answers


def kind_engine() -> str:
    """`docker` where Docker answers, else `podman` (kind's podman provider)."""
    return "docker" if docker_answers() else "podman"


def podman_env() -> dict[str, str]:
    return {
        **os.environ,
        "KIND_EXPERIMENTAL_PROVIDER": "podman",
        "CONTAINERS_CONF": str(CONTAINERS_CONF),
    }


def node_exec(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """A command in the (single) kind node's container, through its engine."""
    engine = kind_engine()
    return subprocess.run(
        [engine, "exec", f"{KIND_NAME}-control-plane", *argv],
        capture_output=True, text=True, check=False, timeout=timeout,
        env=podman_env() if engine == "podman" else None,
    )  # fmt: skip


@contextmanager
def pod_route(kubeconfig: Path) -> Iterator[None]:
    """Pod IPs reachable from the host (as through the local node's bridge): a
    route to each node's pod CIDR via the node container's address on kind's
    network (its InternalIP), removed on exit."""
    nodes = subprocess.run(
        [tool("kubectl"), f"--kubeconfig={kubeconfig}", "get", "nodes", "-o", "json"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    routes = node_routes(json.loads(nodes))
    for cidr, address in routes:
        subprocess.run(["ip", "route", "replace", cidr, "via", address], check=True, timeout=30)
    try:
        yield
    finally:
        for cidr, address in routes:
            subprocess.run(["ip", "route", "del", cidr, "via", address], check=False, timeout=30)


def node_routes(node_list: dict[str, Any]) -> list[tuple[str, str]]:
    """(pod CIDR, InternalIP) of each node of a `kubectl get nodes -o json`
    that has both."""
    routes = []
    for item in node_list["items"]:
        cidr = item.get("spec", {}).get("podCIDR")
        addresses = [
            a["address"] for a in item.get("status", {}).get("addresses", [])
            if a["type"] == "InternalIP" and ":" not in a["address"]
        ]  # fmt: skip
        if cidr and addresses:
            routes.append((cidr, addresses[0]))
    return routes


def host_size() -> HostSize:
    """The machine's CPUs and memory, which every kind node's kubelet reports."""
    meminfo = Path("/proc/meminfo").read_text()
    total = next(line for line in meminfo.splitlines() if line.startswith("MemTotal:"))
    kib = int(total.split()[1])
    return HostSize(cpu_millis=(os.cpu_count() or 1) * 1000, memory_mib=kib // 1024)


def node_process_pid(name: str) -> int:
    """The host PID of the process ``name`` (its comm) inside the kind node: the
    node's processes are host processes under the container's init, which the
    engine names."""
    engine = kind_engine()
    inspected = subprocess.run(
        [engine, "inspect", "--format", "{{.State.Pid}}", f"{KIND_NAME}-control-plane"],
        capture_output=True, text=True, check=False, timeout=60,
        env=podman_env() if engine == "podman" else None,
    )  # fmt: skip
    if inspected.returncode != 0:
        raise RuntimeError(f"{engine} inspect of the kind node failed:\n{inspected.stderr}")
    init = int(inspected.stdout.strip())
    found = [pid for pid in _pids_named(name) if init in _ancestors(pid)]
    if len(found) != 1:
        raise RuntimeError(f"expected one {name} in the kind node (init {init}), found {found}")
    return found[0]


def _pids_named(name: str) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and (proc / "comm").read_text().strip() == name:
                pids.append(int(proc.name))
        except OSError:
            continue  # gone meanwhile
    return pids


def _ancestors(pid: int) -> list[int]:
    chain = []
    while pid > 1:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            break
        pid = int(next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:")))
        chain.append(pid)
    return chain


def corefile_without_forward(corefile: str) -> str:
    """The Corefile without its ``forward`` block (kubeadm's: ``forward .
    /etc/resolv.conf { max_concurrent 1000 }``): names outside the cluster get
    SERVFAIL instead of a query to the node's resolver."""
    return re.sub(r"(?m)^[ \t]*forward [^\n{]*(\{[^}]*\})?[ \t]*\n", "", corefile)


@dataclass(frozen=True)
class KindCluster:
    state: Path
    engine: str  # docker | podman
    images: tuple[str, ...] = ()  # docker: references built locally
    archives: tuple[Path, ...] = ()  # podman: OCI archives of images.sh
    node_image: str | None = None  # podman: the node image built here
    # DBBENCH_NODES: None takes the cluster that is up as it is (one node when
    # none is); a count that differs from the cluster that is up is refused.
    nodes: int | None = None

    @property
    def kubeconfig(self) -> Path:
        return self.state / "kind-kubeconfig"

    @property
    def config_file(self) -> Path:
        return self.state / "kind-config.yaml"

    def node_names(self) -> list[str]:
        """The node containers of the cluster (none when it is not up)."""
        listed = self._kind("get", "nodes", "--name", KIND_NAME)
        if listed.returncode != 0:
            return []
        return [n for n in listed.stdout.split() if n.startswith(f"{KIND_NAME}-")]

    def _env(self) -> dict[str, str]:
        return podman_env() if self.engine == "podman" else dict(os.environ)

    def _kind(self, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [tool("kind"), *args],
            capture_output=True, text=True, check=False, timeout=timeout, env=self._env(),
        )  # fmt: skip

    def _kubectl(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [tool("kubectl"), f"--kubeconfig={self.kubeconfig}", *args],
            input=stdin, capture_output=True, text=True, check=False, timeout=300,
        )  # fmt: skip

    def healthy(self) -> bool:
        if KIND_NAME not in self._kind("get", "clusters").stdout.split():
            return False
        nodes = self._kubectl("get", "nodes", "-o", "json")
        if nodes.returncode != 0:
            return False
        return all(
            any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"]["conditions"])
            for n in json.loads(nodes.stdout)["items"]
        )

    def up(self) -> None:
        self.state.mkdir(parents=True, exist_ok=True)
        problem = count_problem(len(self.node_names()), self.nodes)
        if problem is not None:
            raise RuntimeError(problem)
        if self.engine == "podman":
            # kind mounts the host's /lib/modules into the node; podman refuses a
            # missing source (this VM's kernel has no modules, hence no directory).
            Path("/lib/modules").mkdir(exist_ok=True)
        if not self.healthy():
            nodes = self.nodes or 1
            if nodes > 1 and self.engine == "podman":
                self._network_resolves_names()
            self.config_file.write_text(yaml.safe_dump(kind_config(nodes, host_size())))
            say(f"kind create cluster through {self.engine}, {nodes} node(s) (1-2 minutes for one)")
            started = time.monotonic()
            image = ("--image", self.node_image) if self.node_image else ()
            created = self._kind(
                "create", "cluster", "--name", KIND_NAME, *image, "--config", str(self.config_file),
                "--kubeconfig", str(self.kubeconfig), "--wait", "5m",
            )  # fmt: skip
            if created.returncode != 0:
                raise RuntimeError(f"kind create cluster failed:\n{created.stderr}")
            # kind's --wait covers the control plane only: the workers join after it.
            ready = self._kubectl(
                "wait", "--for=condition=Ready", "nodes", "--all", "--timeout=300s"
            )  # fmt: skip
            if ready.returncode != 0:
                raise RuntimeError(f"the kind nodes did not all become Ready:\n{ready.stderr}")
            say(f"{nodes} node(s) Ready {time.monotonic() - started:.0f} s after kind create began")
            self._cluster_dns_only()
        started = time.monotonic()
        self.import_images()
        say(f"images loaded into every node in {time.monotonic() - started:.0f} s")
        say(f"up: export KUBECONFIG={self.kubeconfig}")

    def _cluster_dns_only(self) -> None:
        got = self._kubectl("-n", "kube-system", "get", "configmap", "coredns", "-o", "json")
        if got.returncode != 0:
            raise RuntimeError(f"reading CoreDNS's configuration failed:\n{got.stderr}")
        configmap = json.loads(got.stdout)
        corefile = configmap["data"]["Corefile"]
        stripped = corefile_without_forward(corefile)
        if stripped != corefile:
            configmap["data"]["Corefile"] = stripped
            steps = [
                self._kubectl("replace", "-f", "-", stdin=json.dumps(configmap)),
                self._kubectl("-n", "kube-system", "rollout", "restart", "deployment/coredns"),
                self._kubectl(
                    "-n", "kube-system", "rollout", "status", "deployment/coredns", "--timeout=180s"
                ),
            ]
            for step in steps:
                if step.returncode != 0:
                    raise RuntimeError(f"CoreDNS without forwarding failed:\n{step.stderr}")

    def import_images(self) -> None:
        for image in self.images:
            say(f"kind load docker-image {image}")
            loaded = self._kind("load", "docker-image", image, "--name", KIND_NAME)
            if loaded.returncode != 0:
                raise RuntimeError(f"kind load docker-image {image} failed:\n{loaded.stderr}")
        nodes = self.node_names()
        if len(nodes) > 1 and self.archives:
            self._import_packed(nodes)
            return
        for archive in self.archives:
            say(f"kind load image-archive {archive.name}")
            loaded = self._kind("load", "image-archive", str(archive), "--name", KIND_NAME)
            if loaded.returncode != 0:
                raise RuntimeError(f"kind load image-archive {archive} failed:\n{loaded.stderr}")

    def _import_packed(self, nodes: list[str]) -> None:
        """Every archive into every node, as the node image preloads its own:
        not unpacked (containerd unpacks an image when a container of
        it is first created). `kind load` unpacks every image in every node,
        so each node would hold each image twice on disk, packed and unpacked,
        whether or not a pod there runs it (the machine's disk is shared)."""
        say(f"{len(self.archives)} archives into each of {len(nodes)} nodes (not unpacked)")
        with ThreadPoolExecutor(max_workers=len(nodes)) as pool:
            for failure in pool.map(self._import_into, nodes):
                if failure:
                    raise RuntimeError(failure)

    def _import_into(self, node: str) -> str | None:
        """The archives into one node's containerd; what failed, or None."""
        for archive in self.archives:
            with archive.open("rb") as stream:
                imported = subprocess.run(
                    [self.engine, "exec", "-i", node, "ctr", "--namespace=k8s.io", "images",
                     "import", "--all-platforms", "--no-unpack", "--digests", "-"],
                    stdin=stream, capture_output=True, check=False, timeout=900, env=self._env(),
                )  # fmt: skip
            if imported.returncode != 0:
                return f"importing {archive.name} into {node} failed:\n{imported.stderr.decode()}"
        return None

    def down(self) -> None:
        deleted = self._kind("delete", "cluster", "--name", KIND_NAME)
        if deleted.returncode != 0:
            raise RuntimeError(f"kind delete cluster failed:\n{deleted.stderr}")
        self.kubeconfig.unlink(missing_ok=True)
        self.config_file.unlink(missing_ok=True)
        if self.engine == "podman":
            self._remove_unused_network()
        say("down")

    def _network_resolves_names(self) -> None:
        """Workers join the control plane by its container name: kind's network
        must resolve names. podman's CNI backend does so with the dnsname plugin
        only, in networks created once it is installed (a network of an earlier
        kind without it goes: no cluster uses it)."""
        backend = subprocess.run(
            ["podman", "info", "--format", "{{.Host.NetworkBackend}}"],
            env=self._env(), capture_output=True, text=True, check=False, timeout=60,
        ).stdout.strip()  # fmt: skip
        plugin = any(Path(d, "dnsname").exists() for d in ("/usr/lib/cni", "/opt/cni/bin"))
        if backend == "cni" and not plugin:
            raise RuntimeError(
                "several kind nodes through podman need container names resolved: install "
                "golang-github-containernetworking-plugin-dnsname (`DBBENCH_CLUSTER=kind "
                "make cluster-tools`)"
            )
        inspected = subprocess.run(
            ["podman", "network", "inspect", KIND_NETWORK, "--format", "{{.DNSEnabled}}"],
            env=self._env(), capture_output=True, text=True, check=False, timeout=60,
        )  # fmt: skip
        if inspected.returncode == 0 and inspected.stdout.strip() == "false":
            say(f"podman network {KIND_NETWORK} resolves no names: removed, kind makes it again")
            self._remove_unused_network()

    def _remove_unused_network(self) -> None:
        """kind leaves its network behind for other clusters; with none left, it goes."""
        if self._kind("get", "clusters").stdout.split():
            return
        podman = ["podman", "network"]
        exists = subprocess.run(
            [*podman, "exists", KIND_NETWORK], env=self._env(), capture_output=True, check=False
        )
        if exists.returncode == 0:
            removed = subprocess.run(
                [*podman, "rm", KIND_NETWORK],
                env=self._env(), capture_output=True, text=True, check=False, timeout=60,
            )  # fmt: skip
            if removed.returncode != 0:
                raise RuntimeError(f"podman network rm {KIND_NETWORK} failed:\n{removed.stderr}")


def say(message: str) -> None:
    print(f"cluster: {message}", file=sys.stderr, flush=True)
