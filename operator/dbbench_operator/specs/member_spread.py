"""Whether a replicated target's members got a node each (pure: its pods in, a
Degraded reason out).

The charts spread a replica set's or a primary/replica pair's members over the
pool's nodes with a preferred pod anti-affinity (`spreadMembers`): where the pool
has fewer nodes than members, the scheduler puts several on one node rather
than leave a member unscheduled. That is allowed but never silent: the run gets
condition Degraded (reason MembersShareANode) naming the target, the node and
the members on it, since the replicas then compete with the primary for that
machine's CPU, memory and disk, which the figures of a replica setup assume
they do not. Sharded targets are left out (their `placement: colocated` asks for
one node on purpose).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

MEMBERS_SHARE_A_NODE = "MembersShareANode"


def shared_node(
    target: str, topology: str, pods: Sequence[Mapping[str, Any]]
) -> tuple[str, str] | None:
    """(reason, message) when two or more of the target's scheduled members share
    a node (the first such node by name); None otherwise."""
    if topology not in ("primaryReplica", "replicaSet"):
        return None
    by_node: dict[str, list[str]] = {}
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            by_node.setdefault(str(node), []).append(str(pod["metadata"]["name"]))
    crowded = sorted((node, sorted(names)) for node, names in by_node.items() if len(names) > 1)
    if not crowded:
        return None
    node, names = crowded[0]
    return MEMBERS_SHARE_A_NODE, (
        f"target {target}: members {', '.join(names)} share node {node} (its pool has fewer "
        f"nodes than the {topology}'s members, which are spread only where it has them): "
        "the replicas compete with the primary for that node's CPU, memory and disk; add "
        "nodes to the pool to give each member its own"
    )
