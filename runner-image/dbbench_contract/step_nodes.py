"""nodes.json: the nodes a step's pods ran on (operator -> report).

The runner pods' environment.json says which node each pod ran on, but not
what that node is. When a step's Job has ended, the operator reads the step's
pods (the target's database members and the step's runner pods) and the
nodes they were bound to, and writes this record next to the step's merged
files. Per node: its name, the labels that selected it (the keys of the
pods' nodeSelector and required node affinity, with the node's values) and
the well-known hostname, instance-type and zone labels, its capacity and
allocatable CPU and memory, what the kubelet reports of itself, its taints,
and which of the step's pods ran there. Nodes are listed once however many
pods ran there; labels other than those are left out (a node carries dozens).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from dbbench_contract.wire import StoredModel

PodKind = Literal["database", "runner"]

# Labels recorded for every node even when no pod selected on them: which
# machine, which machine type, which zone.
WELL_KNOWN_LABELS = (
    "kubernetes.io/hostname",
    "node.kubernetes.io/instance-type",
    "topology.kubernetes.io/zone",
)


class NodeResources(StoredModel):
    """CPU and memory as the node reports them (quantities), and in cores and bytes."""

    cpu: str | None = None
    memory: str | None = None
    cpu_cores: float | None = None
    memory_bytes: int | None = None


class NodeInfo(StoredModel):
    """What the kubelet reports of its machine (node.status.nodeInfo)."""

    kubelet_version: str = ""
    os_image: str = ""
    kernel_version: str = ""
    architecture: str = ""


class PlacedPod(StoredModel):
    """One pod of the step and where it was bound (spec.nodeName)."""

    name: str
    kind: PodKind
    target: str
    # database: its app.kubernetes.io/component (primary, replica, shard0, ...);
    # runner: its completion index (the pod-<index> of the step's directory).
    role: str | None = None
    # None: never scheduled.
    node: str | None = None
    # What the pod asked for: its nodeSelector (the label pool it may land on).
    node_selector: dict[str, str] = Field(default_factory=dict)


class NodeRecord(StoredModel):
    name: str
    # The selecting labels and the well-known ones, with this node's values.
    labels: dict[str, str] = Field(default_factory=dict)
    capacity: NodeResources = NodeResources()
    allocatable: NodeResources = NodeResources()
    info: NodeInfo | None = None
    # "key=value:effect" (a tainted pool admits only pods that tolerate it).
    taints: tuple[str, ...] = ()
    # The step's pods bound to it.
    pods: tuple[str, ...] = ()
    # Why nothing above is known (the node was gone when the step ended).
    error: str | None = None


class StepNodes(StoredModel):
    """A step's nodes.json."""

    pods: tuple[PlacedPod, ...] = ()
    nodes: tuple[NodeRecord, ...] = ()
    # Why the nodes could not be read at all (the API refused: e.g. a chart
    # without the nodes list permission). The pods may still be listed.
    error: str | None = None

    def node(self, name: str) -> NodeRecord | None:
        return next((n for n in self.nodes if n.name == name), None)
