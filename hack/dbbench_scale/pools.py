"""The simulated cluster (pure): node pools as a cloud would offer them, the kwok
Node objects, and the kwok stages that keep pods in a steady state.

Every pool is labelled and tainted, so a pod lands in a pool only when its
nodeSelector and tolerations say so. Capacities are those of common cloud
machine types (allocatable a little under the machine's size).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

POOL_LABEL = "dbbench.io/pool"
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"


@dataclass(frozen=True)
class Pool:
    name: str
    share: float  # fraction of all nodes
    instance_type: str
    cpu: str
    memory: str
    pods: int = 110

    def selector(self) -> dict[str, str]:
        return {POOL_LABEL: self.name}

    def tolerations(self) -> list[dict[str, str]]:
        return [{"key": POOL_LABEL, "operator": "Equal", "value": self.name,
                 "effect": "NoSchedule"}]  # fmt: skip


# 100 nodes: 35 + 20 + 10 + 15 + 20.
POOLS = (
    Pool("sql", 0.35, "m5.4xlarge", "15800m", "61Gi"),
    Pool("mongo", 0.20, "r5.4xlarge", "15800m", "124Gi"),
    Pool("large", 0.10, "m5.8xlarge", "31750m", "124Gi"),
    Pool("exclusive", 0.15, "m5.2xlarge", "7900m", "30Gi", pods=58),
    Pool("runners", 0.20, "c5.4xlarge", "15800m", "30Gi"),
)
POOL_BY_NAME = {p.name: p for p in POOLS}


def node_counts(total: int) -> dict[str, int]:
    """Nodes per pool for `total` nodes (every pool at least one; the rest to `sql`)."""
    counts = {p.name: max(1, int(total * p.share)) for p in POOLS}
    counts["sql"] += max(0, total - sum(counts.values()))
    return counts


def node_name(pool: str, index: int) -> str:
    return f"kwok-{pool}-{index:02d}"


def node_manifest(pool: Pool, index: int) -> dict[str, Any]:
    """A Node kwok manages (the annotation); labels and taint say its pool."""
    name = node_name(pool.name, index)
    capacity = {"cpu": pool.cpu, "memory": pool.memory, "pods": str(pool.pods)}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {KWOK_ANNOTATION: "fake"},
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
                INSTANCE_TYPE: pool.instance_type,
                POOL_LABEL: pool.name,
            },
        },
        "spec": {"taints": [{"key": POOL_LABEL, "value": pool.name, "effect": "NoSchedule"}]},
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def nodes(total: int) -> list[dict[str, Any]]:
    counts = node_counts(total)
    return [node_manifest(p, i) for p in POOLS for i in range(counts[p.name])]


def _stage(name: str, kind: str, selector: list[dict[str, Any]], nxt: dict[str, Any],
           delay_ms: int = 0) -> dict[str, Any]:  # fmt: skip
    spec: dict[str, Any] = {
        "resourceRef": {"apiGroup": "v1", "kind": kind},
        "selector": {"matchExpressions": selector},
        "next": nxt,
    }
    if delay_ms:
        spec["delay"] = {"durationMilliseconds": delay_ms, "jitterDurationMilliseconds": delay_ms}
    return {"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Stage",
            "metadata": {"name": name}, "spec": spec}  # fmt: skip


_NODE_STATUS = """\
{{ $now := Now }}
conditions:
{{ range NodeConditions }}
- lastHeartbeatTime: {{ $now | Quote }}
  lastTransitionTime: {{ $now | Quote }}
  message: {{ .message | Quote }}
  reason: {{ .reason | Quote }}
  status: {{ .status | Quote }}
  type: {{ .type | Quote }}
{{ end }}
addresses:
- address: {{ NodeIP | Quote }}
  type: InternalIP
- address: {{ NodeName | Quote }}
  type: Hostname
allocatable:
{{ YAML .status.allocatable 1 }}
capacity:
{{ YAML .status.capacity 1 }}
nodeInfo:
  architecture: amd64
  kubeletVersion: kwok
  operatingSystem: linux
phase: Running
"""

# Runner pods (owned by a Job) run and are ready, forever: no completion stage.
# Database pods run but never pass readiness: nothing answers on their ports,
# so their runs stay Provisioning (spec.startupGrace is set past the benchmark).
_POD_RUNNING = """\
{{ $now := Now }}
{{ $ready := %s }}
conditions:
- {lastTransitionTime: {{ $now | Quote }}, status: "True", type: Initialized}
- {lastTransitionTime: {{ $now | Quote }}, status: {{ $ready | Quote }}, type: Ready}
- {lastTransitionTime: {{ $now | Quote }}, status: {{ $ready | Quote }}, type: ContainersReady}
containerStatuses:
{{ range .spec.containers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: {{ eq $ready "True" }}
  restartCount: 0
  started: true
  state:
    running:
      startedAt: {{ $now | Quote }}
{{ end }}
hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
podIP: {{ PodIPWith .spec.nodeName false .metadata.uid .metadata.name .metadata.namespace | Quote }}
phase: Running
startTime: {{ $now | Quote }}
"""


def stages() -> list[dict[str, Any]]:
    """kwok's Stage objects: nodes become and stay Ready; pods as described above."""
    ready_not_true = {"key": '.status.conditions.[] | select( .type == "Ready" ) | .status',
                      "operator": "NotIn", "values": ["True"]}  # fmt: skip
    alive = {"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"}
    pending = {"key": ".status.phase", "operator": "In", "values": ["Pending"]}
    job_owned = {"key": ".metadata.ownerReferences.[].kind", "operator": "In", "values": ["Job"]}
    not_job = {"key": ".metadata.ownerReferences.[].kind", "operator": "NotIn", "values": ["Job"]}
    running = {"key": ".status.phase", "operator": "In", "values": ["Running"]}
    node_ready = {"key": '.status.conditions.[] | select( .type == "Ready" ) | .status',
                  "operator": "In", "values": ["True"]}  # fmt: skip
    return [
        _stage("node-initialize", "Node", [ready_not_true], {"statusTemplate": _NODE_STATUS}),
        # Heartbeats every 20-40 s keep the node lifecycle controller from
        # tainting the nodes unreachable (it waits 40 s by default).
        _stage(
            "node-heartbeat",
            "Node",
            [running, node_ready],
            {"statusTemplate": _NODE_STATUS},
            delay_ms=20_000,
        ),
        _stage(
            "runner-pod-running",
            "Pod",
            [alive, pending, job_owned],
            {"statusTemplate": _POD_RUNNING % '"True"'},
        ),
        _stage(
            "database-pod-running",
            "Pod",
            [alive, pending, not_job],
            {"statusTemplate": _POD_RUNNING % '"False"'},
        ),
        _stage(
            "pod-delete",
            "Pod",
            [{"key": ".metadata.deletionTimestamp", "operator": "Exists"}],
            {"delete": True},
        ),
    ]
