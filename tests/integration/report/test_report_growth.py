"""Issue 30, item 1: report.html of a growing-data run draws each measured phase's
rate and p99 against the records stored, from the steps' summaries.

A real run laid out as the results service lays it out (tests/support/generate:
the operator's plan and step files, the runner CLI against a real MariaDB, the
service's merge, the operator's run summary): two targets, a load in three
parts with point reads and queries after each. The report's Data growth
section has, per phase and operation type, a rate chart and a p99 chart of one
line per target, and its table holds each step's own figures at the records
its table held when it began (the figure arithmetic, pure:
tests/unit/report/test_growth_figures.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dbbench_report import write_report
from tests.fixtures.mariadb import MariaDBServer
from tests.support.generate import generate_run
from tests.support.pages import parse

pytestmark = pytest.mark.integration

PART = 300
SPEC: dict[str, Any] = {
    "targets": [
        {"name": "left", "engine": "mariadb",
         "external": {"uriSecretRef": {"name": "targets", "key": "uri"}}},
        {"name": "right", "engine": "mariadb",
         "external": {"uriSecretRef": {"name": "targets", "key": "uri"}}},
    ],
    "hardware": {"exclusive": False},
    "runner": {"threads": 2},
    "dataset": {"shape": "indexed4", "records": 100, "recordSize": 256, "seed": 3},
    "phases": [
        {"name": "load", "type": "insert", "operations": 3 * PART, "batchSize": 50,
         "reportEvery": 100, "growth": {"steps": 3, "measure": ["reads", "queries"]}},
        {"name": "reads", "type": "pointReads", "operations": 200, "reportEvery": 50},
        {"name": "queries", "type": "query", "queries": ["indexedEquality", "scan100"],
         "operations": 60, "reportEvery": 20},
    ],
    "timeout": "30m",
}  # fmt: skip


def test_the_growth_section_plots_each_measured_type_against_records_stored(
    mariadb: MariaDBServer, tmp_path: Path
) -> None:
    servers = {"left": mariadb, "right": mariadb}  # their own databases on one server
    run = generate_run(tmp_path / "claim", tmp_path / "work", "growing",
                       "0b7e1c2a-0000-4000-8000-000000000030", servers, SPEC)  # fmt: skip
    page = parse(write_report(run.path).read_text())
    assert "growth" in page.sections
    operations = {"load": ["insert"], "reads": ["read"],
                  "queries": ["indexedEquality", "scan100"]}  # fmt: skip
    for phase, kinds in operations.items():
        for kind in kinds:
            for chart in ("rate", "p99"):
                assert page.charts[f"growth-{chart}-{phase}-{kind}"] == 2, (phase, kind)
    entries = json.loads((run.path / "summary.json").read_text())["steps"]
    for entry in entries:
        summary = json.loads((run.path / entry["path"] / "summary.json").read_text())
        # What each step's table held when it began: every part loaded before it.
        part = (entry["repeat"] - 1) if entry["phase"] == "load" else entry["repeat"]
        assert summary["recordsBefore"] == PART * part, entry
        for kind, values in summary["operationsByType"].items():
            where = {"target": entry["target"], "phase": entry["phase"], "op": kind,
                     "records": summary["recordsBefore"]}  # fmt: skip
            rate = values["recordsPerSecond"] if kind == "insert" else values["throughput"]
            cell = page.find("growth", "rate", **where)
            assert cell.value is not None
            assert float(cell.value) == pytest.approx(rate, rel=1e-12)  # one repeat a part
            p99 = page.find("growth", "p99Ms", **where)
            assert p99.value is not None
            assert float(p99.value) == pytest.approx(values["latencyMs"]["p99"], rel=1e-12)
    # Every step of the growth at its size: 3 parts x (load + reads + 2 query types) x 2.
    assert len([c for c in page.cells if c.table == "growth" and c.key == "rate"]) == 24
