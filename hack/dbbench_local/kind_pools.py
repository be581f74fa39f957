"""The kind cluster's nodes as a user's node pools (pure): `DBBENCH_NODES`.

One node (the default) is kind's default cluster: a control plane that runs
everything. With more, the control plane keeps kubeadm's
``node-role.kubernetes.io/control-plane:NoSchedule`` taint and the workers
are pools, labelled ``dbbench.io/pool=<pool>`` (the key the simulated cloud
pools of `make scale` use, hack/dbbench_scale/pools.py), in this order:

    worker 1  runners    untainted: runner pods, and everything that names no
                         pool (the operator, the results service, a manifest
                         without placement)
    worker 2  db-small   tainted dbbench.io/pool=db-small:NoSchedule; the
                         kubelet reserves half the machine's CPU and memory, so
                         its allocatable is half db-large's
    worker 3  db-large   tainted dbbench.io/pool=db-large:NoSchedule
    worker 4+ db-small, db-large, runners, db-small, ... (a pool gains a
              second node: replica set members on distinct nodes)

A database pod reaches its pool with its target's ``hardware.nodeSelector``
and a toleration of the pool's taint; runners stay off the database pools
because they do not tolerate them. docs/local-cluster.md, "Several nodes".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

KIND_NAME = "dbbench"
POOL_LABEL = "dbbench.io/pool"
RUNNERS = "runners"
DB_SMALL = "db-small"
DB_LARGE = "db-large"
DATABASE_POOLS = (DB_SMALL, DB_LARGE)
NODES_VARIABLE = "DBBENCH_NODES"
# Each node is a container holding its own copy of every image, on a 2-core
# machine: a larger count is more likely a typo than a wish.
MAX_NODES = 8
_FIRST_WORKERS = (RUNNERS, DB_SMALL, DB_LARGE)
_LATER_WORKERS = (DB_SMALL, DB_LARGE, RUNNERS)


@dataclass(frozen=True)
class HostSize:
    """The machine every kind node shares (each node's kubelet reports it)."""

    cpu_millis: int
    memory_mib: int


@dataclass(frozen=True)
class NodePlan:
    name: str  # the node's container and Kubernetes name, as kind names them
    role: str  # control-plane | worker
    pool: str | None  # the dbbench.io/pool label; None: no pool (one node, control plane)

    @property
    def taint(self) -> str | None:
        """`key=value:effect`, as `kubectl taint` and `kubectl get nodes` spell it."""
        return f"{POOL_LABEL}={self.pool}:NoSchedule" if self.pool in DATABASE_POOLS else None


def worker_pool(index: int) -> str:
    """The pool of the index-th worker (1-based)."""
    if index < 1:
        raise ValueError(f"workers count from 1, not {index}")
    if index <= len(_FIRST_WORKERS):
        return _FIRST_WORKERS[index - 1]
    return _LATER_WORKERS[(index - len(_FIRST_WORKERS) - 1) % len(_LATER_WORKERS)]


def node_plan(nodes: int) -> tuple[NodePlan, ...]:
    """The control plane, then nodes-1 workers named as kind names them
    (``dbbench-worker``, ``dbbench-worker2``, ...) with their pools."""
    if nodes < 1:
        raise ValueError(f"a cluster has at least one node, not {nodes}")
    control = NodePlan(f"{KIND_NAME}-control-plane", "control-plane", None)
    workers = tuple(
        NodePlan(f"{KIND_NAME}-worker{index if index > 1 else ''}", "worker", worker_pool(index))
        for index in range(1, nodes)
    )
    return (control, *workers)


def system_reserved(pool: str | None, host: HostSize) -> str | None:
    """The kubelet's --system-reserved for a pool: db-small holds back half the
    machine, so its allocatable CPU and memory are half the others' (the
    "size" a manifest's requests are fitted to, specs/node_fit)."""
    if pool != DB_SMALL:
        return None
    return f"cpu={host.cpu_millis // 2}m,memory={host.memory_mib // 2}Mi"


def _join_patch(plan: NodePlan, host: HostSize) -> str | None:
    """kubeadm's JoinConfiguration for a worker: its taint at registration (no
    pod lands on it before), its reservation. kind merges the patch by kind
    (v1beta3, kind v0.30's template)."""
    lines = []
    if plan.taint is not None:
        lines += [
            "  taints:",
            f"  - key: {POOL_LABEL}",
            f"    value: {plan.pool}",
            "    effect: NoSchedule",
        ]
    reserved = system_reserved(plan.pool, host)
    if reserved is not None:
        lines += ["  kubeletExtraArgs:", f'    system-reserved: "{reserved}"']
    if not lines:
        return None
    return "\n".join(["kind: JoinConfiguration", "nodeRegistration:", *lines]) + "\n"


def kind_config(nodes: int, host: HostSize) -> dict[str, Any]:
    """kind's cluster configuration (kind.x-k8s.io/v1alpha4) for `nodes` nodes.
    One node is kind's default (a lone control plane, which kind untaints)."""
    entries: list[dict[str, Any]] = []
    for plan in node_plan(nodes):
        entry: dict[str, Any] = {"role": plan.role}
        if plan.pool is not None:
            entry["labels"] = {POOL_LABEL: plan.pool}
        patch = _join_patch(plan, host)
        if patch is not None:
            entry["kubeadmConfigPatches"] = [patch]
        entries.append(entry)
    return {"kind": "Cluster", "apiVersion": "kind.x-k8s.io/v1alpha4", "nodes": entries}


def requested_nodes(value: str | None) -> int | None:
    """DBBENCH_NODES as given: None when unset or empty (one node for a new
    cluster; the cluster that is up otherwise)."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    if not text.isdigit() or not 1 <= int(text) <= MAX_NODES:
        raise RuntimeError(
            f"{NODES_VARIABLE}={value!r}: give a whole number of nodes from 1 to {MAX_NODES} "
            f"(1, the default, is one node; e.g. {NODES_VARIABLE}=4 DBBENCH_CLUSTER=kind "
            "make cluster-up: a control plane and three pools)"
        )
    return int(text)


def nodes_problem(flavour: str, nodes: int | None) -> str | None:
    """Why `flavour` cannot give `nodes` nodes, with the fix; None when it can."""
    if nodes is None or nodes == 1 or flavour == "kind":
        return None
    return (
        f"{NODES_VARIABLE}={nodes} asks for {nodes} nodes, but the {flavour} cluster "
        f"is one node on this machine: run `DBBENCH_CLUSTER=kind {NODES_VARIABLE}={nodes} "
        f"make cluster-up` (kind: a node per container), or unset {NODES_VARIABLE} for the one node"
    )


def count_problem(running: int, nodes: int | None) -> str | None:
    """A kind cluster of `running` nodes is up and `nodes` were asked for."""
    if nodes is None or running in (0, nodes):
        return None
    return (
        f"{NODES_VARIABLE}={nodes}, but the kind cluster that is up has {running} "
        f"node{'s' if running != 1 else ''}: `make cluster-down` first, or run without "
        f"{NODES_VARIABLE} to use the cluster that is up"
    )
