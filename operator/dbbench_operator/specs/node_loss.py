"""Which of a step's nodes have been lost (pure: pods and nodes in, a failure out).

A node whose kubelet stopped answering (its container stopped or paused in a
kind cluster, a machine powered off in a cloud) is marked Ready=Unknown by the
node lifecycle controller once its grace has passed (node-monitor-grace-period,
50 s by default); its pods keep their phase, and the runner's calls to a
database frozen on it may hang rather than fail. A step with a database or
runner pod on such a node fails at the operator's next pass, naming the node, its Ready
condition and the pods on it: what the step measured meanwhile is not a result
of the engine. A node not found (or not yet reporting Ready) is not judged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

NODE_LOST = "NodeLost"
Obj = Mapping[str, Any]


@dataclass(frozen=True)
class LostNode:
    name: str
    ready: str  # the node's Ready condition, as it reads
    database_pods: tuple[str, ...]
    runner_pods: tuple[str, ...]


def _node_of(pod: Obj) -> str | None:
    return (pod.get("spec") or {}).get("nodeName") or None


def _ready(node: Obj | None) -> str | None:
    """How the node's Ready condition reads when it is not True; None when Ready."""
    if node is None:
        return None  # not found: judged by the pods' own fate (the pod GC deletes them)
    conditions = (node.get("status") or {}).get("conditions") or []
    ready = next((c for c in conditions if c.get("type") == "Ready"), None)
    if ready is None:
        return None  # not reported yet: a node just registered, not a lost one
    if ready.get("status") == "True":
        return None
    words = f"Ready={ready.get('status')}"
    if ready.get("lastTransitionTime"):
        words += f" since {ready['lastTransitionTime']}"
    detail = ": ".join(str(ready[k]) for k in ("reason", "message") if ready.get(k))
    return f"{words}, {detail}" if detail else words


def _pod_ready(pod: Obj) -> bool:
    """Ready, or ended (a finished runner pod is not Ready, and needs no node)."""
    status = pod.get("status") or {}
    if status.get("phase") in ("Succeeded", "Failed"):
        return True
    conditions = status.get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def suspect_nodes(database: Sequence[Obj], runners: Sequence[Obj]) -> list[str]:
    """The nodes worth reading: those of pods that are not Ready. The node
    lifecycle controller marks every pod of a node it finds lost not Ready, so a
    step whose pods are all Ready costs no node read on its passes (the check
    runs on every pass of every running step)."""
    return sorted({n for p in [*database, *runners] if not _pod_ready(p) and (n := _node_of(p))})


def lost_nodes(
    database: Sequence[Obj], runners: Sequence[Obj], nodes: Mapping[str, Obj]
) -> list[LostNode]:
    """The nodes of the given pods that are not Ready, with the pods on each."""
    names = sorted({n for p in [*database, *runners] if (n := _node_of(p))})
    lost = []
    for name in names:
        ready = _ready(nodes.get(name))
        if ready is None:
            continue
        lost.append(LostNode(
            name=name, ready=ready,
            database_pods=tuple(sorted(p["metadata"]["name"] for p in database
                                       if _node_of(p) == name)),
            runner_pods=tuple(sorted(p["metadata"]["name"] for p in runners
                                     if _node_of(p) == name)),
        ))  # fmt: skip
    return lost


def node_lost_failure(lost: Sequence[LostNode], where: str) -> tuple[str, str] | None:
    """(reason, message) failing the step `where` (step N (target/phase/repeat))."""
    if not lost:
        return None
    parts = []
    for node in lost:
        pods = [f"database pod(s) {', '.join(node.database_pods)}"] if node.database_pods else []
        pods += [f"runner pod(s) {', '.join(node.runner_pods)}"] if node.runner_pods else []
        parts.append(f"node {node.name} is not Ready ({node.ready}) with {' and '.join(pods)}")
    return NODE_LOST, (
        f"{'; '.join(parts)}, during {where}: the step failed, what it measured while the "
        "node was away is not a result"
    )
