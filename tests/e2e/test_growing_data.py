"""Issue 30, item 1 on the local node: a growing-data run on MariaDB and PostgreSQL.

One run, two targets (the node's MariaDB and PostgreSQL images), indexed4 with
`dataset.records` 500: the load takes each table to 3,000 records in three
parts (`growth`), point reads and queries after each part. Each reading step
found its table holding every part loaded before it (its summary's
`recordsBefore`, the records the runner drew keys from), every read found its
row, and the report has the Data growth section: per measured phase and
operation type, ops/s and p99 against the records stored, one line per target.
That the reads reach keys of the added parts is seen at the servers in
tests/integration/operator/specs/test_growth_at_the_server.py.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from dbbench_local.install import Kube
from tests.e2e.conftest import (
    apply_run,
    delete_run,
    results_json,
    results_text,
    session_name,
    small_spec,
    wait_for_report,
    wait_phase,
)
from tests.support.pages import Page, parse

pytestmark = pytest.mark.e2e

PART, PARTS, DATASET = 1000, 3, 500
SPEC = small_spec(
    targets=[{"name": "maria", "engine": "mariadb",
              "settings": {"innodb_buffer_pool_size": "128M"}},
             {"name": "pg", "engine": "postgresql"}],
    dataset={"shape": "indexed4", "records": DATASET, "recordSize": 256},
    phases=[
        {"name": "load", "type": "insert", "operations": PART * PARTS, "batchSize": 100,
         "reportEvery": 500, "growth": {"steps": PARTS, "measure": ["reads", "queries"]}},
        {"name": "reads", "type": "pointReads", "operations": 600, "reportEvery": 200},
        {"name": "queries", "type": "query", "queries": ["indexedEquality", "scan100"],
         "operations": 100, "reportEvery": 50},
    ],
    timeout="30m",  # 18 steps, each a Job of its own
)  # fmt: skip
NAME = session_name("growth")
OPERATIONS = {"load": ["insert"], "reads": ["read"], "queries": ["indexedEquality", "scan100"]}


@pytest.fixture(scope="module")
def finished(kube: Kube) -> Iterator[dict[str, Any]]:
    try:
        apply_run(kube, NAME, SPEC)
        yield wait_phase(kube, NAME, ("Succeeded", "Failed"), 1800)
    finally:
        with contextlib.suppress(RuntimeError, TimeoutError):
            delete_run(kube, NAME)


@pytest.fixture(scope="module")
def report(kube: Kube, finished: dict[str, Any]) -> Page:
    assert "report.html" in wait_for_report(kube, finished)
    html = results_text(kube, finished, "report.html")
    return parse(html)


def test_each_step_read_what_the_growth_had_loaded(kube: Kube, finished: dict[str, Any]) -> None:
    assert finished["phase"] == "Succeeded", (finished.get("message"), finished.get("conditions"))
    for target in finished["targets"]:
        results = {(p["name"], p["repeat"]): p for p in target["phases"]}
        assert sorted(results) == sorted(
            (phase, part) for phase in OPERATIONS for part in range(1, PARTS + 1)
        )
        for part in range(1, PARTS + 1):
            load = results[("load", part)]
            assert load["records"] == PART, (target["name"], load)
            # exact: the table holds every part loaded so far
            assert load["storage"]["records"] == PART * part, (target["name"], load)
            for phase in ("reads", "queries"):
                result = results[(phase, part)]
                assert result["errors"] == 0, (target["name"], phase, part, result)
                where = f"{target['name']}/{phase}/{part}"
                summary = results_json(kube, finished, f"{where}/summary.json")
                assert summary["recordsBefore"] == PART * part, where
                environment = results_json(kube, finished, f"{where}/pod-0/environment.json")
                # the step's key range: everything loaded, not dataset.records
                assert environment["dataset"]["records"] == PART * part, where
            reads = results[("reads", part)]
            assert reads["lookups"]["read"]["found"] == reads["operations"] == 600, reads


def test_the_report_draws_each_measured_type_against_records_stored(
    kube: Kube, finished: dict[str, Any], report: Page
) -> None:
    assert "growth" in report.sections
    for phase, kinds in OPERATIONS.items():
        for kind in kinds:
            for chart in ("rate", "p99"):
                # one line per target
                assert report.charts[f"growth-{chart}-{phase}-{kind}"] == 2, (phase, kind)
    for target in ("maria", "pg"):
        for part in range(1, PARTS + 1):
            summary = results_json(kube, finished, f"{target}/reads/{part}/summary.json")
            cell = report.find("growth", "rate", target=target, phase="reads", op="read",
                               records=PART * part)  # fmt: skip
            assert cell.value is not None
            assert float(cell.value) == pytest.approx(
                summary["operationsByType"]["read"]["throughput"], rel=1e-12
            )
