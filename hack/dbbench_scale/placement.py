"""Is every pod where its run said it should be? (pure)

Rules, each from the BenchmarkRun API:

- a database pod runs on a node matching its target's node pool (the target's
  own `hardware.nodeSelector`, else the run's);
- a runner pod runs on a node matching `spec.runner.nodeSelector`;
- the members of one replica set (one StatefulSet: a MongoDB replica set or
  shard, a SQL primary with its replicas) run on different nodes, as long as
  the pool has enough nodes for them;
- a node that holds a database pod of an `exclusive` run holds no pod of any
  other run.

Pods not scheduled yet are counted apart, not as misplaced.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

RUN_UID_LABEL = "dbbench.io/run-uid"
TARGET_LABEL = "dbbench.io/target"
COMPONENT_LABEL = "app.kubernetes.io/component"


@dataclass(frozen=True)
class RunPlacement:
    """What a run asks for: its pools and whether it holds its nodes alone."""

    name: str
    exclusive: bool
    runner_selector: Mapping[str, str]
    target_selectors: Mapping[str, Mapping[str, str]]


@dataclass(frozen=True)
class PodPlacement:
    name: str
    namespace: str
    node: str | None
    run_uid: str
    runner: bool
    target: str | None = None
    replica_set: str | None = None  # the owning StatefulSet


@dataclass(frozen=True)
class Misplaced:
    pod: str
    rule: str
    detail: str


@dataclass
class Verdict:
    checked: int = 0
    unscheduled: int = 0
    misplaced: list[Misplaced] = field(default_factory=list)

    def by_rule(self) -> dict[str, int]:
        return dict(Counter(m.rule for m in self.misplaced))


def run_placement(run: Mapping[str, Any]) -> RunPlacement:
    """A BenchmarkRun object's placement (raw: defaults as the API documents them)."""
    spec = run.get("spec") or {}
    hardware = spec.get("hardware") or {}
    selectors = {
        str(t["name"]): dict(((t.get("hardware") or {}).get("nodeSelector"))
                             or hardware.get("nodeSelector") or {})
        for t in spec.get("targets") or []
    }  # fmt: skip
    return RunPlacement(
        name=f"{run['metadata']['namespace']}/{run['metadata']['name']}",
        exclusive=bool(hardware.get("exclusive", True)),
        runner_selector=dict((spec.get("runner") or {}).get("nodeSelector") or {}),
        target_selectors=selectors,
    )


def pod_placement(pod: Mapping[str, Any]) -> PodPlacement | None:
    """A pod of a run (None for pods no run owns)."""
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    uid = labels.get(RUN_UID_LABEL)
    if not uid:
        return None
    owners = {o.get("kind"): o.get("name") for o in meta.get("ownerReferences") or []}
    return PodPlacement(
        name=str(meta.get("name")),
        namespace=str(meta.get("namespace")),
        node=(pod.get("spec") or {}).get("nodeName"),
        run_uid=str(uid),
        runner="Job" in owners or labels.get(COMPONENT_LABEL) == "runner",
        target=labels.get(TARGET_LABEL),
        replica_set=owners.get("StatefulSet"),
    )


def _matches(labels: Mapping[str, str], selector: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def check(
    nodes: Mapping[str, Mapping[str, str]],
    runs: Mapping[str, RunPlacement],
    pods: Iterable[PodPlacement],
) -> Verdict:
    """`nodes`: node name -> labels; `runs`: run uid -> placement."""
    verdict = Verdict()
    placed: list[PodPlacement] = []
    for pod in pods:
        verdict.checked += 1
        if pod.node is None:
            verdict.unscheduled += 1
        else:
            placed.append(pod)
    for pod in placed:
        found = _pool_rule(pod, nodes, runs.get(pod.run_uid))
        if found is not None:
            verdict.misplaced.append(found)
    verdict.misplaced.extend(_spread_rule(placed, nodes, runs))
    verdict.misplaced.extend(_exclusive_rule(placed, runs))
    return verdict


def _pool_rule(
    pod: PodPlacement, nodes: Mapping[str, Mapping[str, str]], run: RunPlacement | None
) -> Misplaced | None:
    ident = f"{pod.namespace}/{pod.name}"
    if run is None:
        return Misplaced(ident, "orphan", "no BenchmarkRun has its run uid")
    assert pod.node is not None
    selector = run.runner_selector if pod.runner else run.target_selectors.get(pod.target or "", {})
    if not _matches(nodes.get(pod.node, {}), selector):
        kind = "runner" if pod.runner else "database"
        return Misplaced(ident, f"{kind}-pool", f"on {pod.node}, outside {dict(selector)}")
    return None


def _pool_size(selector: Mapping[str, str], nodes: Mapping[str, Mapping[str, str]]) -> int:
    return sum(_matches(labels, selector) for labels in nodes.values())


def _spread_rule(
    placed: Sequence[PodPlacement],
    nodes: Mapping[str, Mapping[str, str]],
    runs: Mapping[str, RunPlacement],
) -> list[Misplaced]:
    members: defaultdict[tuple[str, str], list[PodPlacement]] = defaultdict(list)
    for pod in placed:
        if not pod.runner and pod.replica_set:
            members[(pod.namespace, pod.replica_set)].append(pod)
    found = []
    for (ns, sts), group in members.items():
        run = runs.get(group[0].run_uid)
        selector = run.target_selectors.get(group[0].target or "", {}) if run else {}
        if _pool_size(selector, nodes) < len(group):
            continue  # more members than nodes: sharing cannot be avoided
        seen: set[str] = set()
        for pod in sorted(group, key=lambda p: p.name):
            assert pod.node is not None
            if pod.node in seen:
                detail = f"shares {pod.node} with another member of {sts}"
                found.append(Misplaced(f"{ns}/{pod.name}", "replica-set-spread", detail))
            seen.add(pod.node)
    return found


def _exclusive_rule(
    placed: Sequence[PodPlacement], runs: Mapping[str, RunPlacement]
) -> list[Misplaced]:
    holders: defaultdict[str, set[str]] = defaultdict(set)  # node -> exclusive run uids
    for pod in placed:
        run = runs.get(pod.run_uid)
        if run is not None and run.exclusive and not pod.runner and pod.node:
            holders[pod.node].add(pod.run_uid)
    found = []
    for pod in placed:
        assert pod.node is not None
        others = holders.get(pod.node, set()) - {pod.run_uid}
        if others:
            names = ", ".join(sorted(runs[u].name for u in others))
            found.append(Misplaced(f"{pod.namespace}/{pod.name}", "exclusive",
                                   f"on {pod.node}, held exclusively by {names}"))  # fmt: skip
    return found


def spread_of(placed: Iterable[PodPlacement]) -> tuple[int, int]:
    """(nodes used, most pods on one node) of a set of pods: how widely they spread."""
    per_node = Counter(p.node for p in placed if p.node)
    return len(per_node), max(per_node.values(), default=0)
