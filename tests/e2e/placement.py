"""What the placement suite (tests/e2e/test_node_pools.py) reads of a multi-node
cluster: its pools, and where a run's pods were scheduled.

The cluster is kind's `DBBENCH_NODES=4` (hack/dbbench_local/kind_pools.py): a
control plane and the workers labelled `dbbench.io/pool` = runners, db-small and
db-large, the database pools tainted `dbbench.io/pool=<pool>:NoSchedule`. A run is
placed on them the way docs/local-cluster.md tells a user to: a target's
`hardware.nodeSelector` and a toleration of its pool's taint, the runners'
`runner.nodeSelector`.

Pods are recorded while the run goes (`PodWatch`, a polling thread): runner pods
of an earlier step and the database pods are gone once the run is cleaned up.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from dbbench_local.install import Kube
from dbbench_local.kind_pools import DB_LARGE, DB_SMALL, POOL_LABEL, RUNNERS
from tests.e2e.conftest import RUNS_NS

POOLS = (RUNNERS, DB_SMALL, DB_LARGE)
SUITE = "the placement suite (`make e2e-placement`)"


def node_pools(nodes: Mapping[str, Any]) -> dict[str, str | None]:
    """{node name: its dbbench.io/pool label, None without one} (pure)."""
    return {
        str(n["metadata"]["name"]): (n["metadata"].get("labels") or {}).get(POOL_LABEL)
        for n in nodes.get("items") or []
    }


def missing_pools(pools: Mapping[str, str | None]) -> str | None:
    """Why this cluster cannot run the placement suite; None when it can (pure)."""
    have = {p for p in pools.values() if p is not None}
    if have >= set(POOLS):
        return None
    return (
        f"the cluster has {len(pools)} node(s) and the pools {sorted(have) or 'none'}; "
        f"{SUITE} needs nodes labelled {POOL_LABEL} = {', '.join(POOLS)}: "
        "`make e2e-placement` (DBBENCH_CLUSTER=kind DBBENCH_NODES=4)"
    )


def placed(spec: dict[str, Any], pool: str) -> dict[str, Any]:
    """A `hardware` block's nodeSelector and toleration for a database pool."""
    toleration = {"key": POOL_LABEL, "operator": "Equal", "value": pool, "effect": "NoSchedule"}
    return {**spec, "nodeSelector": {POOL_LABEL: pool}, "tolerations": [toleration]}


@dataclass(frozen=True)
class Seen:
    """One pod of the run, once scheduled."""

    name: str
    node: str
    runner: bool  # a step's runner pod (labelled dbbench.io/step); else a database pod
    target: str  # dbbench.io/target
    component: str  # app.kubernetes.io/component


def seen_pod(pod: Mapping[str, Any]) -> Seen | None:
    """(pure) None until the scheduler has given it a node."""
    node = (pod.get("spec") or {}).get("nodeName")
    if not node:
        return None
    labels = pod["metadata"].get("labels") or {}
    return Seen(name=str(pod["metadata"]["name"]), node=str(node),
                runner="dbbench.io/step" in labels, target=str(labels.get("dbbench.io/target")),
                component=str(labels.get("app.kubernetes.io/component")))  # fmt: skip


@dataclass
class PodWatch:
    """Every pod labelled with the run, with the node it was scheduled to."""

    pods: dict[str, Seen] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def look(self, kube: Kube, run: str) -> None:
        listed = kube.get("pods", "-n", RUNS_NS, f"-ldbbench.io/run={run}") or {"items": []}
        for pod in listed["items"]:
            seen = seen_pod(pod)
            if seen is not None:
                self.pods.setdefault(seen.name, seen)


@contextmanager
def watching_pods(kube: Kube, run: str, every: float = 2.0) -> Iterator[PodWatch]:
    watch = PodWatch()
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            try:
                watch.look(kube, run)
            except Exception as exc:  # noqa: BLE001 (a failed look is retried; kept for the report)
                watch.errors.append(repr(exc))
            stop.wait(every)

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    try:
        yield watch
    finally:
        stop.set()
        thread.join(timeout=30)
        watch.look(kube, run)


def misplaced(
    pods: Mapping[str, Seen], pools: Mapping[str, str | None], target_pools: Mapping[str, str]
) -> list[str]:
    """(pure) Every pod not on its pool: a database pod off its target's pool, a
    runner pod off the runner pool; one line each, naming the node and its pool."""
    wrong = []
    for pod in pods.values():
        wanted = RUNNERS if pod.runner else target_pools.get(pod.target)
        have = pools.get(pod.node)
        if wanted is None or have != wanted:
            kind = "runner" if pod.runner else f"database ({pod.target})"
            wrong.append(f"{kind} pod {pod.name} on {pod.node} (pool {have}), wanted {wanted}")
    return wrong
