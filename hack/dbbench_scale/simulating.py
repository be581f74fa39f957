"""The simulated nodes: kwok as a process of ours, the Node objects, and a tiny
volume binder (kwok simulates no storage; without a bound claim a StatefulSet's
pod is never scheduled).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from dbbench_local.controlplane import ControlPlane, tool
from dbbench_local.processes import stop_pid
from dbbench_scale import pools

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
            # kwok's client-go asks for streaming lists, which this API server (with
            # Debian's etcd 3.4) refuses; its watches then broke and it missed
            # deletions (pods left Terminating). Plain list + watch instead.
            env={**os.environ, "KUBE_FEATURE_WatchListClient": "false"},
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


def _volume_for(claim: Any) -> dict[str, Any]:
    """A PersistentVolume bound in advance to one claim (the PV controller binds them)."""
    size = claim.spec.resources.requests["storage"]
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": f"scale-{claim.metadata.uid}", "labels": {"dbbench.io/scale": "pv"}},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": claim.spec.access_modes,
            "storageClassName": claim.spec.storage_class_name or "",
            "persistentVolumeReclaimPolicy": "Retain",
            "hostPath": {"path": "/nonexistent/kwok-volume"},  # never mounted: no kubelet
            "claimRef": {"namespace": claim.metadata.namespace, "name": claim.metadata.name,
                         "uid": claim.metadata.uid},
        },
    }  # fmt: skip


@dataclass
class VolumeBinder:
    """Gives every pending claim a volume of its own, once a second, in a thread."""

    api: Any  # kubernetes.client.ApiClient
    stop_event: threading.Event = field(default_factory=threading.Event)
    made: set[str] = field(default_factory=set)
    thread: threading.Thread | None = None

    def start(self) -> VolumeBinder:
        self.thread = threading.Thread(target=self._loop, name="volume-binder", daemon=True)
        self.thread.start()
        return self

    def _loop(self) -> None:
        from kubernetes import client  # noqa: PLC0415 - heavy import

        core = client.CoreV1Api(self.api)
        while not self.stop_event.wait(BIND_EVERY_S):
            with contextlib.suppress(Exception):  # a busy API server: next round
                for claim in core.list_persistent_volume_claim_for_all_namespaces().items:
                    if claim.spec.volume_name or claim.metadata.uid in self.made:
                        continue
                    core.create_persistent_volume(_volume_for(claim))
                    self.made.add(claim.metadata.uid)

    def stop(self) -> None:
        self.stop_event.set()
        if self.thread is not None:
            self.thread.join(timeout=10)


@contextlib.contextmanager
def simulated_nodes(plane: ControlPlane, workdir: Path, total: int) -> Iterator[Kwok]:
    kwok = Kwok(plane, workdir).start()
    binder = VolumeBinder(plane.api_client()).start()
    try:
        add_nodes(plane, total)
        yield kwok
    finally:
        binder.stop()
        kwok.stop()
