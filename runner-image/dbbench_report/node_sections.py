"""The report's Nodes table (pure, HTML): the machines the run's pods ran on.

From each step's nodes.json (the operator's, `dbbench_contract.step_nodes`):
one row per node, however many steps used it, with the labels that put the
pods there, its CPU and memory (capacity, and allocatable: what pods may
use), its kubelet, its taints, and which pods ran there: the databases' by
name, the runner pods by step (a run has one runner Job per step). A node is
described as the last step that read it saw it. Runs recorded before nodes.json
existed have no such file: the section is left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape

from dbbench_contract.step_nodes import NodeRecord, NodeResources, PlacedPod
from dbbench_report.cells import NA, mapping, raw, row, table, text
from dbbench_report.reading import Run

KEY, TITLE = "nodes", "Nodes"
# Lines of pods shown per node before "and N more" (a long run's runner steps).
MAX_POD_LINES = 12
HEADERS = ("node", "labels", "CPU capacity", "CPU allocatable", "memory capacity (GiB)",
           "memory allocatable (GiB)", "kubelet, OS, arch", "taints", "pods")  # fmt: skip


@dataclass
class _Node:
    record: NodeRecord
    databases: dict[str, PlacedPod] = field(default_factory=dict)
    runner_steps: dict[str, int] = field(default_factory=dict)  # step path -> pods


def gather(run: Run) -> list[_Node]:
    """Every node the run's steps recorded, once, in name order."""
    nodes: dict[str, _Node] = {}
    for step in run.steps:
        if step.nodes is None:
            continue
        pods = {p.name: p for p in step.nodes.pods}
        for record in step.nodes.nodes:
            seen = nodes.get(record.name)
            if seen is None:
                seen = nodes[record.name] = _Node(record)
            elif record.error is None or seen.record.error is not None:
                seen.record = record  # a later description, unless it was not read then
            for name in record.pods:
                pod = pods.get(name)
                if pod is not None and pod.kind == "database":
                    seen.databases[name] = pod
                elif pod is not None:
                    seen.runner_steps[step.path] = seen.runner_steps.get(step.path, 0) + 1
    return [nodes[name] for name in sorted(nodes)]


def _cpu(key: str, value: NodeResources) -> str:
    if value.cpu_cores is None:
        return text(value.cpu, key)
    return (f'<td class="num" data-key="{escape(key)}" data-value="{value.cpu_cores!r}">'
            f"{value.cpu_cores:g}</td>")  # fmt: skip


def _memory(key: str, value: NodeResources) -> str:
    if value.memory_bytes is None:
        return text(value.memory, key)
    gib = value.memory_bytes / 2**30
    return (f'<td class="num" data-key="{escape(key)}" data-value="{value.memory_bytes}">'
            f"{gib:,.1f}</td>")  # fmt: skip


def _pods(node: _Node) -> str:
    lines = [
        f"database {pod.name} ({pod.target}{f', {pod.role}' if pod.role else ''})"
        for pod in sorted(node.databases.values(), key=lambda p: p.name)
    ]
    lines += [f"runner {path} ({count} pod{'s' if count > 1 else ''})"
              for path, count in node.runner_steps.items()]  # fmt: skip
    if len(lines) > MAX_POD_LINES:
        lines = [*lines[:MAX_POD_LINES], f"… and {len(lines) - MAX_POD_LINES} more"]
    return "<br>".join(escape(line) for line in lines) or escape(NA)


def _kubelet(record: NodeRecord) -> str:
    info = record.info
    if info is None:
        return NA
    return ", ".join(part for part in (info.kubelet_version, info.os_image, info.architecture)
                     if part) or NA  # fmt: skip


def _row(node: _Node) -> str:
    record = node.record
    labels = (escape(f"not read: {record.error}") if record.error
              else mapping(record.labels))  # fmt: skip
    return row(
        [
            text(record.name, "node"),
            raw(labels, "labels"),
            _cpu("cpu capacity", record.capacity),
            _cpu("cpu allocatable", record.allocatable),
            _memory("memory capacity", record.capacity),
            _memory("memory allocatable", record.allocatable),
            text(_kubelet(record), "kubelet"),
            raw("<br>".join(escape(t) for t in record.taints) or escape(NA), "taints"),
            raw(_pods(node), "pods"),
        ],
        {"node": record.name},
    )


def section_html(run: Run) -> str:
    nodes: Sequence[_Node] = gather(run)
    if not nodes:
        return ""
    note = (
        "<p>The nodes the run's pods were bound to, as the operator read them when each "
        "step ended: the labels that selected them (the pods' nodeSelector and required "
        "node affinity) and the hostname, instance type and zone; allocatable is what "
        "pods may use of the capacity.</p>"
    )
    body = note + table("nodes", HEADERS, [_row(n) for n in nodes])
    return f'<section id="{KEY}" data-section="{KEY}"><h2>{escape(TITLE)}</h2>{body}</section>'
