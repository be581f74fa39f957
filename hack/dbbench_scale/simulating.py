"""The simulated nodes: kwok as a process of ours, the Node objects, and a tiny
volume binder (kwok simulates no storage; without a bound claim a StatefulSet's
pod is never scheduled).
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from dbbench_local.controlplane import ControlPlane, tool
from dbbench_local.processes import stop_pid
from dbbench_scale import pools
from dbbench_scale.observing import Api

BIND_EVERY_S = 1.0


@dataclass
class Kwok:
    plane: ControlPlane
    workdir: Path
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> Kwok:
        config = self.workdir / "kwok-stages.yaml"
        config.write_text(yaml.safe_dump_all(pools.stages()))
        log = (self.workdir / "kwok.log").open("wb")
        self.process = subprocess.Popen(
            [tool("kwok"), f"--config={config}", f"--kubeconfig={self.plane.kubeconfig}",
             f"--manage-nodes-with-annotation-selector={pools.KWOK_ANNOTATION}=fake",
             "--cidr=10.200.0.0/16", "--node-ip=10.199.0.1"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        return self

    def stop(self) -> None:
        if self.process is not None:
            stop_pid(self.process.pid, self.process, 15.0)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None


def add_nodes(plane: ControlPlane, total: int) -> list[dict[str, Any]]:
    """Create the Nodes (status included: kwok keeps it); wait until all are Ready."""
    nodes = pools.nodes(total)
    plane.kubectl("create", "-f", "-", input=yaml.safe_dump_all(nodes))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        out = plane.kubectl("get", "nodes", "-l", "type=kwok", "-o",
                            "jsonpath={range .items[*]}{.status.conditions[?(@.type=='Ready')]"
                            ".status}{'\\n'}{end}").stdout  # fmt: skip
        if out.split().count("True") == len(nodes):
            return nodes
        time.sleep(1)
    raise RuntimeError(f"kwok nodes not Ready after 120 s; see {plane.workdir}")


def volume_for(claim: Mapping[str, Any]) -> dict[str, Any]:
    """A PersistentVolume bound in advance to one claim (the PV controller binds them)."""
    meta, spec = claim["metadata"], claim["spec"]
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": f"scale-{meta['uid']}", "labels": {"dbbench.io/scale": "pv"}},
        "spec": {
            "capacity": {"storage": spec["resources"]["requests"]["storage"]},
            "accessModes": spec["accessModes"],
            "storageClassName": spec.get("storageClassName") or "",
            "persistentVolumeReclaimPolicy": "Retain",
            "hostPath": {"path": "/nonexistent/kwok-volume"},  # never mounted: no kubelet
            "claimRef": {"namespace": meta["namespace"], "name": meta["name"],
                         "uid": meta["uid"]},
        },
    }  # fmt: skip


@dataclass
class VolumeBinder:
    """Gives every pending claim a volume of its own, once a second, in a thread."""

    api: Api
    stop_event: threading.Event = field(default_factory=threading.Event)
    made: set[str] = field(default_factory=set)
    thread: threading.Thread | None = None

    def start(self) -> VolumeBinder:
        self.thread = threading.Thread(target=self._loop, name="volume-binder", daemon=True)
        self.thread.start()
        return self

    def _loop(self) -> None:
        while not self.stop_event.wait(BIND_EVERY_S):
            with contextlib.suppress(OSError):  # a busy API server: next round
                for claim in self.api.items("/api/v1/persistentvolumeclaims"):
                    uid = claim["metadata"]["uid"]
                    if claim["spec"].get("volumeName") or uid in self.made:
                        continue
                    self.api.create("/api/v1/persistentvolumes", volume_for(claim))
                    self.made.add(uid)

    def stop(self) -> None:
        self.stop_event.set()
        if self.thread is not None:
            self.thread.join(timeout=10)


@contextlib.contextmanager
def simulated_nodes(plane: ControlPlane, workdir: Path, total: int) -> Iterator[Kwok]:
    kwok = Kwok(plane, workdir).start()
    binder = VolumeBinder(Api(plane)).start()
    try:
        add_nodes(plane, total)
        yield kwok
    finally:
        binder.stop()
        kwok.stop()
