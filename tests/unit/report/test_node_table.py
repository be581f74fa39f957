"""Issue 32, item 3: the report's Nodes table, from the steps' nodes.json (pure).

One row per node however many steps used it; its selecting and well-known
labels, capacity and allocatable CPU and memory (exact values in data-value),
kubelet and taints, and which pods ran there (databases by name, runner pods
by step). nodes.json itself is built from API objects in
tests/unit/operator/specs/test_node_record.py; the file read back from a run's
directory: test_a_steps_nodes_json_is_read_with_the_step below."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dbbench_contract.api import parse_spec
from dbbench_contract.environment import Environment, TargetInfo
from dbbench_contract.run_summary import RunMeta, RunSummary, StepEntry
from dbbench_contract.step_nodes import StepNodes
from dbbench_contract.summary import StepSummary
from dbbench_report import rendering
from dbbench_report.node_sections import KEY, MAX_POD_LINES, section_html
from dbbench_report.reading import Run, Step, read_step
from tests.support.pages import parse

GIB = 1 << 30
SPEC = {
    "targets": [{"name": "maria", "engine": "mariadb"}],
    "dataset": {"shape": "indexed4", "records": 100},
    "phases": [{"name": "load", "type": "insert"},
               {"name": "reads", "type": "pointReads", "operations": 10}],
}  # fmt: skip


def node(name: str, pool: str, allocatable_cpu: str = "3800m") -> dict[str, Any]:
    return {
        "name": name,
        "labels": {"dbbench.io/pool": pool, "kubernetes.io/hostname": name},
        "capacity": {"cpu": "4", "memory": "16Gi", "cpuCores": 4.0, "memoryBytes": 16 * GIB},
        "allocatable": {"cpu": allocatable_cpu, "memory": "15Gi",
                        "cpuCores": float(allocatable_cpu.rstrip("m")) / 1000,
                        "memoryBytes": 15 * GIB},
        "info": {"kubeletVersion": "v1.33.1", "osImage": "Debian GNU/Linux 12 (bookworm)",
                 "architecture": "amd64"},
        "taints": ["dbbench.io/pool=db:NoSchedule"] if pool == "db" else [],
    }  # fmt: skip


def nodes_json(phase: str, allocatable_cpu: str = "3800m") -> dict[str, Any]:
    runners = [f"r-{phase}-{i}" for i in range(2)]
    return {
        "pods": [
            {"name": "r-maria-0", "kind": "database", "target": "maria", "role": "primary",
             "node": "db-1", "nodeSelector": {"dbbench.io/pool": "db"}},
            *({"name": n, "kind": "runner", "target": "maria", "role": str(i), "node": "run-1",
               "nodeSelector": {"dbbench.io/pool": "runners"}} for i, n in enumerate(runners)),
        ],
        "nodes": [
            {**node("db-1", "db", allocatable_cpu), "pods": ["r-maria-0"]},
            {**node("run-1", "runners"), "pods": runners},
        ],
    }  # fmt: skip


def step(phase: str, nodes: dict[str, Any] | None) -> Step:
    summary = StepSummary.from_wire({"target": "maria", "engine": "mariadb", "phase": phase,
                                     "type": "x"})  # fmt: skip
    environment = Environment(target=TargetInfo(name="maria", engine="mariadb"))
    return Step("maria", phase, 1, "x", f"maria/{phase}/1", summary, environment, (), (), (),
                None if nodes is None else StepNodes.from_wire(nodes))  # fmt: skip


def run_of(steps: list[Step]) -> Run:
    summary = RunSummary(api_version="dbbench.io/v1alpha1",
                         run=RunMeta(namespace="n", name="r", uid="u"),
                         spec=parse_spec(SPEC))  # fmt: skip
    return Run(Path("/nowhere"), summary, tuple(steps), ())


def test_one_row_per_node_with_its_labels_resources_and_pods() -> None:
    # The second step read db-1 later, with less allocatable CPU: the table shows that.
    page = parse(section_html(run_of([step("load", nodes_json("load")),
                                      step("reads", nodes_json("reads", "3500m"))])))  # fmt: skip
    assert page.sections == [KEY]
    nodes = sorted({c.row["node"] for c in page.cells if c.table == "nodes"})
    assert nodes == ["db-1", "run-1"]
    assert page.find("nodes", "labels", node="db-1").text == (
        "dbbench.io/pool = dbkubernetes.io/hostname = db-1"
    )
    assert page.find("nodes", "cpu capacity", node="db-1").value == "4.0"
    assert page.find("nodes", "cpu allocatable", node="db-1").value == "3.5"
    assert page.find("nodes", "memory capacity", node="db-1").value == str(16 * GIB)
    allocatable = page.find("nodes", "memory allocatable", node="run-1")
    assert (allocatable.value, allocatable.text) == (str(15 * GIB), "15.0")
    assert page.find("nodes", "kubelet", node="db-1").text == (
        "v1.33.1, Debian GNU/Linux 12 (bookworm), amd64"
    )
    assert page.find("nodes", "taints", node="db-1").text == "dbbench.io/pool=db:NoSchedule"
    assert page.find("nodes", "taints", node="run-1").text == "—"
    # The database pod once, however many steps it served; runner pods per step.
    assert page.find("nodes", "pods", node="db-1").text == "database r-maria-0 (maria, primary)"
    assert page.find("nodes", "pods", node="run-1").text == (
        "runner maria/load/1 (2 pods)runner maria/reads/1 (2 pods)"
    )


def test_a_node_not_read_says_why_and_keeps_an_earlier_description() -> None:
    unread = nodes_json("reads")
    unread["nodes"][0] = {"name": "db-1", "pods": ["r-maria-0"], "error": "list Node: 403"}
    page = parse(section_html(run_of([step("load", nodes_json("load")), step("reads", unread)])))
    assert page.find("nodes", "cpu allocatable", node="db-1").value == "3.8"
    alone = parse(section_html(run_of([step("reads", unread)])))
    assert alone.find("nodes", "labels", node="db-1").text == "not read: list Node: 403"
    assert alone.find("nodes", "cpu capacity", node="db-1").text == "—"


def test_the_whole_page_has_the_nodes_section_after_the_environment() -> None:
    html = rendering.render(run_of([step("load", nodes_json("load"))]))
    sections = parse(html).sections
    assert sections[-2:] == ["environment", KEY]
    assert f'<a href="#{KEY}">Nodes</a>' in html


def test_runs_without_nodes_json_have_no_nodes_section() -> None:
    assert section_html(run_of([step("load", None)])) == ""
    assert KEY in [key for key, _, _ in rendering.SECTIONS]


def test_a_long_runs_runner_steps_are_cut_short() -> None:
    steps = [step(f"p{i}", nodes_json(f"p{i}")) for i in range(MAX_POD_LINES + 3)]
    page = parse(section_html(run_of(steps)))
    assert page.find("nodes", "pods", node="run-1").text.endswith("… and 3 more")


def test_a_steps_nodes_json_is_read_with_the_step(tmp_path: Path) -> None:
    directory = tmp_path / "maria" / "load" / "1"
    directory.mkdir(parents=True)
    environment = Environment(target=TargetInfo(name="maria", engine="mariadb"))
    summary = {"target": "maria", "engine": "mariadb", "phase": "load", "type": "insert"}
    files = {"summary.json": json.dumps(summary), "environment.json": json.dumps(
        environment.to_wire()), "series-ops.csv": "operations,windowSeconds,opsPerSecond\n",
        "series-seconds.csv": "epochSecond,operation,operations,errors,latencySumUs\n"}  # fmt: skip
    for name, content in files.items():
        (directory / name).write_text(content)
    entry = StepEntry(step=1, target="maria", phase="load", repeat=1, type="insert",
                      path="maria/load/1")  # fmt: skip
    assert read_step(tmp_path, entry).nodes is None
    (directory / "nodes.json").write_text(json.dumps(nodes_json("load")))
    found = read_step(tmp_path, entry).nodes
    assert found is not None
    assert found.node("run-1") is not None
    assert [p.name for p in found.pods] == ["r-maria-0", "r-load-0", "r-load-1"]
