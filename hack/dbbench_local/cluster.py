"""A real single-node Kubernetes on this machine: up, down, status.

The control plane of ``controlplane.py`` serves on the node address; the node
is containerd + runc + bridge CNI with the kubelet, kube-proxy, CoreDNS and
the local-path provisioner, all host processes started here and recorded by
PID in ``.cluster/pids.json``, so that ``down`` (another command) stops each
one, unmounts what the node mounted and removes the address and bridge.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import yaml

from dbbench_local import hostnet, node, processes
from dbbench_local.controlplane import REPO, ControlPlane, tool
from dbbench_local.kind import KindCluster, engine_available, kind_engine
from dbbench_local.kind_pools import NODES_VARIABLE, nodes_problem, requested_nodes

STATE = Path(os.environ.get("DBBENCH_CLUSTER_STATE", REPO / ".cluster"))
IMAGES_DIR = Path(os.environ.get("DBBENCH_IMAGES_DIR", STATE / "images"))
READY_TIMEOUT = 180.0
APP_VERSION = yaml.safe_load((REPO / "Chart.yaml").read_text())["appVersion"]
# What hack/cluster/kind-images.sh builds (Docker); that node pulls the database images.
KIND_IMAGES = (f"dbbench/operator:{APP_VERSION}", f"dbbench/runner:{APP_VERSION}")
# What hack/cluster/kind-node-image.sh writes: the node image's reference (podman).
KIND_NODE_IMAGE_FILE = IMAGES_DIR / "kind" / "node-image.txt"
# The flavour `up` built: later commands without DBBENCH_CLUSTER (`make
# cluster-down` above all) go to the cluster that is up, not to the default.
FLAVOUR_FILE = STATE / "flavour"
FLAVOURS = ("kind", "local")
# Stop order: the node's consumers first, the API server before etcd.
STOP_ORDER = (
    "local-path-provisioner", "coredns", "kube-proxy", "kubelet", "containerd",
    "kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd",
)  # fmt: skip
HOST_BINARIES = ("containerd", "containerd-shim-runc-v2", "runc", "ctr", "iptables", "ip")


def say(message: str) -> None:
    print(f"cluster: {message}", file=sys.stderr, flush=True)


NODE_PATHS = node.NodePaths(
    var=Path("/var/lib/dbbench-local"), run=Path("/run/dbbench-local"), conf=STATE / "node"
)


@dataclass(frozen=True)
class LocalCluster:
    state: Path = STATE
    paths: node.NodePaths = NODE_PATHS

    @property
    def kubeconfig(self) -> Path:
        return self.state / "controlplane" / "kubeconfig"

    @property
    def pid_file(self) -> Path:
        return self.state / "pids.json"

    @property
    def logs(self) -> Path:
        return self.state / "logs"

    # -- queries -------------------------------------------------------------

    def kubectl(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [tool("kubectl"), f"--kubeconfig={self.kubeconfig}", *args],
            input=stdin, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip

    def ctr(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["ctr", f"--address={self.paths.containerd_socket}", "-n", "k8s.io", *args],
            capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip

    def process_states(self) -> dict[str, bool]:
        return {p.name: processes.is_running(p) for p in processes.load(self.pid_file)}

    def node_ready(self) -> bool:
        out = self.kubectl("get", "node", node.NODE_NAME, "-o", "json")
        if out.returncode != 0:
            return False
        conditions = json.loads(out.stdout)["status"].get("conditions") or []
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

    def healthy(self) -> bool:
        running = self.process_states()
        return bool(running) and all(running.values()) and self.node_ready()

    # -- up ------------------------------------------------------------------

    def up(self) -> None:
        problem = nodes_problem("local", requested_nodes(os.environ.get(NODES_VARIABLE)))
        if problem is not None:
            raise RuntimeError(problem)
        if self.healthy():
            # Images rebuilt since the cluster came up replace the imported ones.
            self.import_images()
            say(f"already up; export KUBECONFIG={self.kubeconfig}")
            return
        if processes.load(self.pid_file):
            say("a previous cluster left state behind: taking it down first")
            self.down()
        preflight()
        for d in (self.logs, self.paths.conf, self.paths.var, self.paths.run):
            d.mkdir(parents=True, exist_ok=True)
        started: list[processes.Started] = []
        try:
            added = hostnet.add_address(node.NODE_IP)
            (self.state / "address-added").write_text("1" if added else "0")
            hostnet.enable_forwarding()
            say("control plane (etcd, kube-apiserver, controller-manager, scheduler)")
            started += self._control_plane()
            processes.save(self.pid_file, started)
            say("containerd")
            started.append(self._containerd())
            processes.save(self.pid_file, started)
            self.import_images()
            say("kubelet, kube-proxy, CoreDNS, local-path provisioner")
            started += self._node_agents()
            processes.save(self.pid_file, started)
            self._wait(self.node_ready, f"node {node.NODE_NAME} Ready")
            self._wait(self._dns_answers, "cluster DNS answering")
        except BaseException:
            processes.save(self.pid_file, started)
            say(f"failed: logs in {self.logs}; taking down what started")
            self.down()
            raise
        say(f"up: export KUBECONFIG={self.kubeconfig}")

    def _control_plane(self) -> list[processes.Started]:
        plane = ControlPlane(
            self.state / "controlplane",
            extra_ips=(node.NODE_IP,),
            apiserver_port=node.APISERVER_PORT,
            address=node.NODE_IP,
        )
        plane.start()
        # Detach: the processes outlive this command; `down` stops them by PID.
        return [
            processes.Started(name, proc.pid, os.path.realpath(tool(name)))
            for name, proc in plane.procs.items()
        ]

    def _start(self, name: str, argv: Sequence[str]) -> processes.Started:
        return processes.start_detached(name, argv, self.logs / f"{name}.log")

    def _containerd(self) -> processes.Started:
        conf = self.paths.conf / "containerd.toml"
        conf.write_text(node.containerd_config(self.paths))
        self.paths.cni_conf_dir.mkdir(parents=True, exist_ok=True)
        (self.paths.cni_conf_dir / "10-dbbench.conflist").write_text(node.cni_conflist(self.paths))
        started = self._start("containerd", [_which("containerd"), f"--config={conf}"])
        self._wait(lambda: self.ctr("version").returncode == 0, "containerd socket", 60)
        return started

    def import_images(self) -> None:
        """Import the archives `make images` built (manifest: `<archive> <reference>`)."""
        entries = manifest_entries()
        for archive, reference in entries:
            say(f"importing {reference}")
            result = self.ctr("images", "import", "--no-unpack", str(IMAGES_DIR / archive))
            if result.returncode != 0:
                raise RuntimeError(f"ctr import of {archive} failed: {result.stderr}")
        listed = set(self.ctr("images", "ls", "-q").stdout.split())
        missing = [ref for _, ref in entries if ref not in listed]
        if missing:
            raise RuntimeError(f"imported archives did not provide {missing}; have {listed}")

    def _node_agents(self) -> list[processes.Started]:
        conf = self.paths.conf
        (conf / "kubelet.yaml").write_text(yaml.safe_dump(node.kubelet_config(self.paths)))
        (conf / "kube-proxy.yaml").write_text(
            yaml.safe_dump(node.kube_proxy_config(self.kubeconfig))
        )
        (conf / "Corefile").write_text(node.corefile(self.kubeconfig))
        (conf / "local-path.json").write_text(json.dumps(node.local_path_config(self.paths)))
        self.paths.volumes.mkdir(parents=True, exist_ok=True)
        started = [
            self._start("kubelet", [
                tool("kubelet"), f"--config={conf / 'kubelet.yaml'}",
                f"--kubeconfig={self.kubeconfig}", f"--root-dir={self.paths.kubelet_root}",
                f"--cert-dir={self.paths.kubelet_root / 'pki'}",
                f"--hostname-override={node.NODE_NAME}", f"--node-ip={node.NODE_IP}",
                f"--node-labels={node.NODE_POOL_LABEL}={node.NODE_POOL}", "--v=1",
            ]),
            self._start("kube-proxy", [tool("kube-proxy"), f"--config={conf / 'kube-proxy.yaml'}"]),
            self._start("coredns", [tool("coredns"), "-conf", str(conf / "Corefile")]),
        ]  # fmt: skip
        manifests = yaml.safe_dump_all(node.storage_manifests(self.paths))
        applied = self.kubectl("apply", "-f", "-", stdin=manifests)
        if applied.returncode != 0:
            raise RuntimeError(f"storage manifests refused: {applied.stderr}")
        started.append(
            processes.start_detached(
                "local-path-provisioner",
                [tool("local-path-provisioner"), "start", f"--kubeconfig={self.kubeconfig}",
                 f"--config={conf / 'local-path.json'}",
                 f"--namespace={node.LOCAL_PATH_NAMESPACE}",
                 f"--helper-image={node.HELPER_IMAGE}",
                 "--configmap-name=local-path-config",
                 "--service-account-name=default"],
                self.logs / "local-path-provisioner.log",
                env={**os.environ, "KUBECONFIG": str(self.kubeconfig)},
            )
        )  # fmt: skip
        return started

    def _dns_answers(self) -> bool:
        # The host's resolver does not use CoreDNS: ask it directly.
        return _dns_query(node.NODE_IP, "kubernetes.default.svc.cluster.local") is not None

    def _wait(self, check: Callable[[], bool], what: str, timeout: float = READY_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            dead = [n for n, alive in self.process_states().items() if not alive]
            if dead:
                raise RuntimeError(f"{', '.join(dead)} exited; see {self.logs}")
            if check():
                return
            time.sleep(1)
        raise RuntimeError(f"timed out after {timeout:.0f}s waiting for {what}; see {self.logs}")

    # -- down ----------------------------------------------------------------

    def down(self) -> None:
        recorded = {p.name: p for p in processes.load(self.pid_file)}
        if "kubelet" in recorded:
            say("stopping kubelet")
            processes.stop(recorded.pop("kubelet"))
        if "containerd" in recorded and processes.is_running(recorded["containerd"]):
            say("killing pod containers")
            self._kill_containers()
        for name in STOP_ORDER:
            if name in recorded:
                say(f"stopping {name}")
                processes.stop(recorded.pop(name))
        if "kube-proxy" in {p.name for p in processes.load(self.pid_file)}:
            # Its iptables chains outlive it.
            subprocess.run(
                [tool("kube-proxy"), "--cleanup"], capture_output=True, check=False, timeout=60
            )
        if "kubelet" in {p.name for p in processes.load(self.pid_file)}:
            hostnet.remove_kubelet_chains()
        _kill_orphan_shims(self.paths.containerd_socket)
        hostnet.remove_pod_netns()
        hostnet.unmount_all(self.paths.var, self.paths.run)
        hostnet.delete_link(node.BRIDGE)
        flag = self.state / "address-added"
        if flag.exists() and flag.read_text() == "1":
            hostnet.remove_address(node.NODE_IP)
        shutil.rmtree(self.paths.var, ignore_errors=True)
        shutil.rmtree(self.paths.run, ignore_errors=True)
        for name in ("controlplane", "node", "pids.json", "address-added"):
            target = self.state / name
            if target.is_dir():
                shutil.rmtree(target, ignore_errors=True)
            else:
                target.unlink(missing_ok=True)
        say("down")

    def _kill_containers(self) -> None:
        tasks = self.ctr("tasks", "ls", "-q").stdout.split()
        for task in tasks:
            self.ctr("tasks", "kill", "-s", "SIGKILL", task)
        deadline = time.monotonic() + 30
        while tasks and time.monotonic() < deadline:
            for task in tasks:
                self.ctr("tasks", "delete", task)
            tasks = self.ctr("tasks", "ls", "-q").stdout.split()
            time.sleep(0.5)


def _which(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise RuntimeError(f"{name} not found: run `make cluster-tools`")
    return found


def preflight() -> None:
    if os.geteuid() != 0:
        raise RuntimeError("the local node needs root (containerd, iptables, mounts)")
    for name in HOST_BINARIES:
        _which(name)
    for name in ("kubelet", "kube-proxy", "coredns", "local-path-provisioner"):
        tool(name)
    if not Path(node.CNI_BIN_DIR, "bridge").exists():
        raise RuntimeError(f"CNI plugins missing in {node.CNI_BIN_DIR}: run `make cluster-tools`")


def _kill_orphan_shims(socket: Path) -> None:
    """containerd shims started by our containerd (their command line names its socket)."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if (
            cmdline
            and cmdline[0].endswith(b"containerd-shim-runc-v2")
            and str(socket).encode() in b" ".join(cmdline)
        ):
            processes.stop(
                processes.Started("shim", int(proc.name), os.path.realpath(cmdline[0].decode()))
            )


def _dns_query(server: str, name: str) -> str | None:
    """One A query over UDP; the address answered, or None."""
    import socket  # noqa: PLC0415
    import struct  # noqa: PLC0415

    query = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0)
    for label in name.split("."):
        query += bytes([len(label)]) + label.encode()
    query += b"\0" + struct.pack(">HH", 1, 1)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(2)
        try:
            sock.sendto(query, (server, 53))
            reply = sock.recv(512)
        except OSError:
            return None
    answers = struct.unpack(">H", reply[6:8])[0]
    if answers == 0:
        return None
    return ".".join(str(b) for b in reply[-4:])


class Cluster(Protocol):
    @property
    def kubeconfig(self) -> Path: ...
    def up(self) -> None: ...
    def down(self) -> None: ...
    def healthy(self) -> bool: ...
    def import_images(self) -> None: ...


def manifest_entries() -> list[tuple[str, str]]:
    """(archive, reference) of images.sh's manifest, less the Python base (it only
    builds the other images; no pod runs it)."""
    manifest = IMAGES_DIR / "manifest.txt"
    if not manifest.exists():
        raise RuntimeError(f"{manifest} is missing: run `make images` first")
    lines = [line.split() for line in manifest.read_text().splitlines() if line.strip()]
    return [(a, ref) for a, ref in lines if a != "python-base.tar"]


def flavour() -> str:
    """DBBENCH_CLUSTER if set; else the flavour of the cluster that is up; else
    `kind` where a Docker engine answers, `local` where none does.

    podman answering is not enough: it answers on the development machines,
    where the local node is the default (kind through podman is asked for)."""
    wanted = os.environ.get("DBBENCH_CLUSTER", "")
    if wanted not in ("", *FLAVOURS):
        raise RuntimeError(f"DBBENCH_CLUSTER={wanted!r}: use `kind` or `local`")
    if wanted:
        return wanted
    recorded = FLAVOUR_FILE.read_text().strip() if FLAVOUR_FILE.exists() else ""
    if recorded in FLAVOURS:
        return recorded
    return "kind" if engine_available() else "local"


def record_flavour() -> None:
    """After `up`: the cluster that is up is the one later commands take."""
    FLAVOUR_FILE.parent.mkdir(parents=True, exist_ok=True)
    FLAVOUR_FILE.write_text(flavour() + "\n")


def forget_flavour() -> None:
    """After `down`: the next `up` chooses afresh."""
    FLAVOUR_FILE.unlink(missing_ok=True)


def images_recipe() -> str:
    """What `make images` builds: `local` (images.sh), `kind-docker`
    (kind-images.sh) or `kind-podman` (images.sh and kind-node-image.sh)."""
    if flavour() == "local":
        return "local"
    return f"kind-{kind_engine()}"


def node_images_built_here() -> bool:
    """The node runs images.sh's database images (no registry to pull from)."""
    return images_recipe() != "kind-docker"


def cni_enforces_policies() -> bool:
    """kindnet (kind on Docker) enforces NetworkPolicies; the local node's bridge
    CNI and the ptp CNI of the kind node image built here do not."""
    return images_recipe() == "kind-docker"


def chosen() -> Cluster:
    recipe = images_recipe()
    nodes = requested_nodes(os.environ.get(NODES_VARIABLE))
    if recipe == "kind-docker":
        return KindCluster(STATE, "docker", images=KIND_IMAGES, nodes=nodes)
    if recipe == "kind-podman":
        if not KIND_NODE_IMAGE_FILE.exists():
            raise RuntimeError(f"{KIND_NODE_IMAGE_FILE} is missing: run `make images` first")
        return KindCluster(
            STATE, "podman",
            archives=tuple(IMAGES_DIR / archive for archive, _ in manifest_entries()),
            node_image=KIND_NODE_IMAGE_FILE.read_text().strip(), nodes=nodes,
        )  # fmt: skip
    return LocalCluster()
