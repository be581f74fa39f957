"""nodes.json's format (dbbench_contract.step_nodes): what the operator writes
and the report reads, camelCase on the wire, readable by a newer reader."""

from __future__ import annotations

import json

from dbbench_contract.step_nodes import NodeRecord, NodeResources, PlacedPod, StepNodes

WRITTEN = StepNodes(
    pods=(
        PlacedPod(name="r-maria-0", kind="database", target="maria", role="primary",
                  node="worker-1", node_selector={"dbbench.io/pool": "db-small"}),
        PlacedPod(name="r-s1-abc", kind="runner", target="maria", role="0", node=None),
    ),
    nodes=(
        NodeRecord(name="worker-1", labels={"dbbench.io/pool": "db-small"},
                   allocatable=NodeResources(cpu="1900m", memory="7Gi", cpu_cores=1.9,
                                             memory_bytes=7 * 2**30),
                   taints=("dbbench.io/pool=databases:NoSchedule",), pods=("r-maria-0",)),
    ),
)  # fmt: skip


def test_the_file_is_camel_case_and_reads_back_equal() -> None:
    wire = WRITTEN.to_wire()
    text = json.dumps(wire)
    for key in ('"nodeSelector"', '"cpuCores"', '"memoryBytes"'):
        assert key in text
    assert "node_selector" not in text
    assert wire["pods"][1]["node"] is None  # never scheduled: said, not left out
    assert StepNodes.from_wire(json.loads(text)) == WRITTEN


def test_a_newer_writers_keys_are_ignored_and_nodes_are_found_by_name() -> None:
    wire = WRITTEN.to_wire()
    wire["nodes"][0]["gpuCount"] = 2
    wire["schema"] = 2
    read = StepNodes.from_wire(wire)
    found = read.node("worker-1")
    assert found is not None
    assert found.allocatable.memory_bytes == 7 * 2**30
    assert read.node("worker-2") is None
