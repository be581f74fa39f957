"""The runs `make scale` applies (pure): a realistic mix of shapes, each held in a
steady state on the simulated nodes.

- `external`: one runner pod against a MariaDB on this machine (the script's
  own); kwok keeps the pod running, so the run stays `Running` in its step;
- `deployed`: a MariaDB, MySQL primary + 2 replicas, PostgreSQL primary +
  standby or MongoDB replica set in its pool; kwok runs the pods but they
  never become ready, so the run stays `Provisioning` (startupGrace is long);
- `exclusive`: a MariaDB with `hardware.exclusive` pinned to one node of the
  exclusive pool: once every node is held, the rest wait `Pending`;
- `sharer`: a non-exclusive run asking for the whole exclusive pool: it must
  wait while any exclusive run holds a node of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dbbench_scale.pools import POOL_BY_NAME, node_name

GROUP_VERSION = "dbbench.io/v1alpha1"
URI_SECRET = "scale-target"
HOURS = "3h"  # past the benchmark: no run times out or gives up on its pods

# Per 100 runs: what a shared cluster with several teams might queue.
MIX = (("external", 72), ("deployed", 24), ("exclusive", 2), ("sharer", 2))
DEPLOYED = (
    ("mariadb", "standalone", None, "sql"),
    ("mysql", "primaryReplica", 3, "sql"),
    ("postgresql", "primaryReplica", 2, "large"),
    ("mongodb", "replicaSet", 3, "mongo"),
)


@dataclass(frozen=True)
class RunShape:
    kind: str
    index: int  # within its kind, over the whole fleet


def shapes(count: int) -> list[RunShape]:
    """`count` runs in the mix's proportions, interleaved so every 100 has them all."""
    per_hundred = [kind for kind, n in MIX for _ in range(n)]
    seen: dict[str, int] = {}
    result = []
    for i in range(count):
        kind = per_hundred[(i * 37) % len(per_hundred)]  # 37 and 100 are coprime
        result.append(RunShape(kind, seen.get(kind, 0)))
        seen[kind] = seen.get(kind, 0) + 1
    return result


def namespace(i: int, namespaces: int) -> str:
    return f"team-{i % namespaces:02d}"


def _placement(pool: str, **extra: str) -> dict[str, Any]:
    p = POOL_BY_NAME[pool]
    return {"nodeSelector": {**p.selector(), **extra}, "tolerations": p.tolerations()}


def _resources(cpu: str, memory: str) -> dict[str, Any]:
    return {"requests": {"cpu": cpu, "memory": memory}, "limits": {"cpu": cpu, "memory": memory}}


def _runner(pods: int = 1) -> dict[str, Any]:
    return {"pods": pods, "threads": 2, **_placement("runners"),
            "resources": _resources("250m", "256Mi")}  # fmt: skip


def _target(shape: RunShape, exclusive_nodes: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """(target, hardware) of one run."""
    if shape.kind == "external":
        external = {"uriSecretRef": {"name": URI_SECRET, "key": "uri"}}
        return {"name": "ext", "engine": "mariadb", "external": external}, {"exclusive": False}
    hardware: dict[str, Any] = {
        "resources": _resources("1", "4Gi"), "storage": {"size": "20Gi"}, "exclusive": False,
    }  # fmt: skip
    if shape.kind == "deployed":
        engine, topology, members, pool = DEPLOYED[shape.index % len(DEPLOYED)]
        target: dict[str, Any] = {"name": "db", "engine": engine, "topology": topology}
        if members:
            target["members"] = members
        return target, {**hardware, **_placement(pool)}
    target = {"name": "db", "engine": "mariadb"}
    if shape.kind == "exclusive":
        node = node_name("exclusive", shape.index % exclusive_nodes)
        pinned = _placement("exclusive", **{"kubernetes.io/hostname": node})
        return target, {**hardware, **pinned, "resources": _resources("4", "16Gi"),
                        "exclusive": True}  # fmt: skip
    return target, {**hardware, **_placement("exclusive")}  # a sharer: the whole pool


def run_manifest(
    name: str, ns: str, target: dict[str, Any], hardware: dict[str, Any], runner_pods: int = 1
) -> dict[str, Any]:
    return {
        "apiVersion": GROUP_VERSION,
        "kind": "BenchmarkRun",
        "metadata": {"name": name, "namespace": ns, "labels": {"dbbench.io/scale": "true"}},
        "spec": {
            "targets": [target],
            "hardware": hardware,
            "runner": _runner(runner_pods),
            "dataset": {"records": 100_000, "recordSize": 256},
            # A load first: a deployed target starts empty, and admission refuses reads
            # of a table no earlier phase loads (external ones too, once a run loads).
            "phases": [
                {"name": "load", "type": "insert"},
                {"name": "reads", "type": "pointReads", "duration": "2h"},
            ],
            "timeout": HOURS,
            "startupGrace": HOURS,
        },
    }


def fleet(count: int, namespaces: int, exclusive_nodes: int) -> list[dict[str, Any]]:
    """`count` BenchmarkRuns over `namespaces` namespaces, in the mix above."""
    return [
        run_manifest(
            f"r{i:04d}-{shape.kind}", namespace(i, namespaces), *_target(shape, exclusive_nodes)
        )
        for i, shape in enumerate(shapes(count))
    ]


def sharded_run(ns: str) -> dict[str, Any]:
    """A MongoDB of 10 shards x 3 members, 3 config servers and mongos routers."""
    target = {"name": "mongo", "engine": "mongodb", "topology": "sharded", "shards": 10,
              "members": 3}  # fmt: skip
    hardware = {"resources": _resources("2", "8Gi"), "storage": {"size": "50Gi"},
                "exclusive": False, **_placement("mongo")}  # fmt: skip
    return run_manifest("sharded", ns, target, hardware)


def wide_runner_run(ns: str, pods: int = 30) -> dict[str, Any]:
    """One step of `pods` runner pods against the external MariaDB."""
    return run_manifest("runners30", ns, *_target(RunShape("external", 0), 1), runner_pods=pods)
