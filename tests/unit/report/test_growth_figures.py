"""Issue 30, item 1: the report's data-growth figures from step summaries (pure).

Per phase a growth measures and per operation type: ops/s and p99 against the
records the table held when each step began (`recordsBefore`), one line per
target, repeats at one size averaged; the growing load in records/s. The
figures rendered from real result files: tests/integration/report/test_report_growth.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dbbench_contract.api import parse_spec
from dbbench_contract.environment import Environment, TargetInfo
from dbbench_contract.run_summary import RunMeta, RunSummary
from dbbench_contract.summary import StepSummary
from dbbench_report.growth import growth_figures, section_html
from dbbench_report.reading import Run, Step
from dbbench_report.verdict import verdicts
from tests.support.pages import parse

SPEC = {
    "targets": [{"name": "a", "engine": "mariadb"}, {"name": "b", "engine": "mariadb"}],
    "dataset": {"shape": "indexed4", "records": 100},
    "repeats": 2,
    "phases": [
        {"name": "load", "type": "insert", "operations": 200,
         "growth": {"steps": 2, "measure": ["reads"]}},
        {"name": "reads", "type": "pointReads", "operations": 10},
        {"name": "tail", "type": "pointReads", "operations": 10},
    ],
}  # fmt: skip


def step(target: str, phase: str, repeat: int, before: int, ops: dict[str, Any]) -> Step:
    by_type = {op: {"operations": 10, "throughput": rate, "latencyMs": {"p99": p99},
                    "recordsPerSecond": rate * 10 if op == "insert" else None}
               for op, (rate, p99) in ops.items()}  # fmt: skip
    summary = StepSummary.from_wire({
        "target": target, "engine": "mariadb", "phase": phase, "type": "x",
        "recordsBefore": before, "operationsByType": by_type,
    })  # fmt: skip
    environment = Environment(target=TargetInfo(name=target, engine="mariadb"))
    return Step(target, phase, repeat, "x", f"{target}/{phase}/{repeat}", summary, environment,
                (), (), ())  # fmt: skip


def run_of(steps: list[Step]) -> Run:
    summary = RunSummary(api_version="dbbench.io/v1alpha1",
                         run=RunMeta(namespace="n", name="r", uid="u"),
                         spec=parse_spec(SPEC))  # fmt: skip
    return Run(Path("/nowhere"), summary, tuple(steps), ())


STEPS = [
    step("a", "load", 1, 0, {"insert": (50.0, 2.0)}),
    step("a", "reads", 1, 100, {"read": (1000.0, 1.0)}),
    step("a", "reads", 2, 100, {"read": (1200.0, 3.0)}),
    step("a", "load", 2, 100, {"insert": (40.0, 2.5)}),
    step("a", "reads", 3, 200, {"read": (800.0, 2.0)}),
    step("a", "reads", 4, 200, {"read": (600.0, 4.0)}),
    step("a", "tail", 1, 200, {"read": (1.0, 1.0)}),  # not measured by the growth
    step("b", "load", 1, 0, {"insert": (30.0, 3.0)}),
    step("b", "reads", 1, 100, {"read": (500.0, 5.0)}),
    step("b", "reads", 2, 100, {"read": (700.0, 7.0)}),
    step("b", "load", 2, 100, {"insert": (20.0, 4.0)}),
    step("b", "reads", 3, 200, {"read": (300.0, 9.0)}),
    step("b", "reads", 4, 200, {"read": (100.0, 11.0)}),
]


def test_each_measured_phase_and_type_against_records_stored_one_line_per_target() -> None:
    figures = {(f.phase, f.operation): f for f in growth_figures(run_of(STEPS))}
    assert list(figures) == [("load", "insert"), ("reads", "read")]  # not `tail`
    reads = figures[("reads", "read")]
    assert [(p.target, p.records, p.rate, p.p99_ms, p.repeats) for p in reads.points] == [
        ("a", 100, 1100.0, 2.0, 2), ("a", 200, 700.0, 3.0, 2),
        ("b", 100, 600.0, 6.0, 2), ("b", 200, 200.0, 10.0, 2),
    ]  # fmt: skip
    rate = reads.lines("rate")
    assert [(line.label, line.x, line.y) for line in rate] == [
        ("a", (100.0, 200.0), (1100.0, 700.0)),
        ("b", (100.0, 200.0), (600.0, 200.0)),
    ]
    assert [line.y for line in reads.lines("p99")] == [(2.0, 3.0), (6.0, 10.0)]
    load = figures[("load", "insert")]
    assert load.unit == "records/s"
    assert [(p.records, p.rate) for p in load.points if p.target == "a"] == [
        (0, 500.0),
        (100, 400.0),
    ]


def test_the_section_charts_and_tables_the_figures() -> None:
    page = parse(section_html(run_of(STEPS)))
    assert page.sections == ["growth"]
    assert page.charts == {"growth-rate-load-insert": 2, "growth-p99-load-insert": 2,
                           "growth-rate-reads-read": 2, "growth-p99-reads-read": 2}  # fmt: skip
    cell = page.find("growth", "rate", target="b", phase="reads", op="read", records=200)
    assert cell.value is not None
    assert float(cell.value) == pytest.approx(200.0)
    assert page.find("growth", "p99Ms", target="a", phase="reads", op="read",
                     records=100).value == "2.0"  # fmt: skip


def test_a_run_without_a_growth_has_no_section() -> None:
    spec = {
        **SPEC,
        "phases": [
            {"name": "load", "type": "insert"},
            {"name": "reads", "type": "pointReads", "operations": 10},
        ],
    }
    summary = RunSummary(api_version="dbbench.io/v1alpha1",
                         run=RunMeta(namespace="n", name="r", uid="u"),
                         spec=parse_spec(spec))  # fmt: skip
    run = Run(Path("/nowhere"), summary, tuple(STEPS), ())
    assert growth_figures(run) == []
    assert section_html(run) == ""


def test_the_summary_does_not_call_a_growths_range_noise() -> None:
    # reads' repeats ran at 100 and 200 records: their range is the growth's effect
    noise = {(v.phase, v.figure): v.noise for v in verdicts(run_of(STEPS))}
    assert noise[("reads", "throughput")] == noise[("load", "p99")] == "grows: see Data growth"
    assert noise[("tail", "throughput")] == "one target"  # only a ran it, not measured
