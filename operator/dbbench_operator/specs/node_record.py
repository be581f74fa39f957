"""A step's nodes.json from its pods and their nodes as the API shows them (pure).

Which labels to keep: a node carries dozens (kubelet, cloud, device plugins);
what a reader needs is why the pod landed there, so the record keeps the keys
the step's pods selected on (their nodeSelector, and the keys of their
required node affinity terms: the charts set none today, a user's cluster
may add them through admission) with this node's values, and the well-known
hostname, instance-type and zone. See `dbbench_contract.step_nodes`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from dbbench_contract.api import parse_quantity
from dbbench_contract.step_nodes import (
    WELL_KNOWN_LABELS,
    NodeInfo,
    NodeRecord,
    NodeResources,
    PlacedPod,
    PodKind,
    StepNodes,
)

Obj = Mapping[str, Any]
COMPONENT_LABEL = "app.kubernetes.io/component"
# An Indexed Job's pods carry their index as an annotation (and, since 1.28, a label).
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"


def _meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def _spec(obj: Obj) -> Obj:
    return obj.get("spec") or {}


def _role(pod: Obj, kind: PodKind) -> str | None:
    meta = _meta(pod)
    labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
    if kind == "database":
        return labels.get(COMPONENT_LABEL)
    return annotations.get(COMPLETION_INDEX) or labels.get(COMPLETION_INDEX)


def placed_pod(pod: Obj, kind: PodKind, target: str) -> PlacedPod:
    spec = _spec(pod)
    return PlacedPod(
        name=str(_meta(pod).get("name") or ""),
        kind=kind,
        target=target,
        role=_role(pod, kind),
        node=spec.get("nodeName") or None,
        node_selector={str(k): str(v) for k, v in (spec.get("nodeSelector") or {}).items()},
    )


def affinity_keys(pod: Obj) -> set[str]:
    """The label keys of the pod's required node affinity (every term's expressions)."""
    node_affinity = (_spec(pod).get("affinity") or {}).get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    return {
        str(expression["key"])
        for term in required.get("nodeSelectorTerms") or []
        for expression in term.get("matchExpressions") or []
        if expression.get("key")
    }


def selecting_keys(pods: Iterable[Obj]) -> set[str]:
    """Every label key the pods selected nodes on."""
    keys: set[str] = set()
    for pod in pods:
        keys.update(str(k) for k in (_spec(pod).get("nodeSelector") or {}))
        keys.update(affinity_keys(pod))
    return keys


def _number(value: str | None) -> Decimal | None:
    if value is None:
        return None
    try:
        return parse_quantity(str(value))
    except ValueError:
        return None  # a quantity this parser does not know: the raw text is kept


def resources(values: Obj | None) -> NodeResources:
    """A node's capacity or allocatable CPU and memory."""
    values = values or {}
    cpu = None if values.get("cpu") is None else str(values["cpu"])
    memory = None if values.get("memory") is None else str(values["memory"])
    cores, size = _number(cpu), _number(memory)
    return NodeResources(
        cpu=cpu,
        memory=memory,
        cpu_cores=None if cores is None else float(cores),
        memory_bytes=None if size is None else int(size),
    )


def _info(status: Obj) -> NodeInfo | None:
    info = status.get("nodeInfo")
    if not info:
        return None
    return NodeInfo(
        kubelet_version=str(info.get("kubeletVersion") or ""),
        os_image=str(info.get("osImage") or ""),
        kernel_version=str(info.get("kernelVersion") or ""),
        architecture=str(info.get("architecture") or ""),
    )


def _taint(taint: Obj) -> str:
    value = taint.get("value")
    return f"{taint.get('key')}{'' if value in (None, '') else f'={value}'}:{taint.get('effect')}"


def node_record(node: Obj, keys: Iterable[str], pods: Sequence[str]) -> NodeRecord:
    """One node: the labels among `keys` (and the well-known ones) it carries, its
    resources, kubelet, taints and the pods bound to it."""
    labels = _meta(node).get("labels") or {}
    status = node.get("status") or {}
    wanted = set(keys) | set(WELL_KNOWN_LABELS)
    return NodeRecord(
        name=str(_meta(node).get("name") or ""),
        labels={k: str(labels[k]) for k in sorted(wanted) if k in labels},
        capacity=resources(status.get("capacity")),
        allocatable=resources(status.get("allocatable")),
        info=_info(status),
        taints=tuple(_taint(t) for t in _spec(node).get("taints") or []),
        pods=tuple(sorted(pods)),
    )


def step_nodes(
    database_pods: Sequence[Obj],
    runner_pods: Sequence[Obj],
    nodes: Mapping[str, Obj],
    target: str,
    *,
    error: str | None = None,
) -> StepNodes:
    """The step's record: every pod with its node, and each node used once, with the
    labels that selected the pods bound to it. A node the pods name that `nodes`
    lacks (deleted since, or not read: `error`) is listed by name only."""
    raw = [(p, placed_pod(p, "database", target)) for p in database_pods]
    raw += [(p, placed_pod(p, "runner", target)) for p in runner_pods]
    raw.sort(key=lambda pair: (pair[1].kind, pair[1].name))
    records = []
    for name in sorted({placed.node for _, placed in raw if placed.node}):
        bound = [(pod, placed) for pod, placed in raw if placed.node == name]
        names = [placed.name for _, placed in bound]
        node = nodes.get(name)
        if node is None:
            why = error or "not found when the step ended (deleted)"
            records.append(NodeRecord(name=name, pods=tuple(sorted(names)), error=why))
            continue
        records.append(node_record(node, selecting_keys(pod for pod, _ in bound), names))
    return StepNodes(pods=tuple(placed for _, placed in raw), nodes=tuple(records), error=error)
