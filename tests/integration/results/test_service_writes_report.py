"""The results service renders report.html when a run's summary.json arrives
(uploaded last by the operator): a real service, real files, over HTTP."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from dbbench_contract.tokens import run_token
from dbbench_local.results_service import running_results_service
from tests.fixtures.result_sets import ResultSets
from tests.fixtures.results_service import request

pytestmark = pytest.mark.integration


def test_report_is_written_next_to_the_results(result_sets: ResultSets, tmp_path: Path) -> None:
    source = result_sets.candidate
    with running_results_service(tmp_path / "service") as service:
        run = source.run
        token = run_token(service.key, run.namespace, run.name, run.uid)
        prefix = f"/v1/runs/{run.namespace}/{run.name}/{run.uid}/files"
        files = sorted(p for p in source.path.rglob("*") if p.is_file() and p.name != "report.html")
        summary = source.path / "summary.json"
        for path in [p for p in files if p != summary] + [summary]:
            status, body = request(service, "PUT", f"{prefix}/{path.relative_to(source.path)}",
                                   body=path.read_bytes(), token=token)  # fmt: skip
            assert status == 201, body
        report = service.root / run.namespace / run.name / run.uid / "report.html"
        deadline = time.monotonic() + 120
        while not report.is_file() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert report.is_file(), "the service did not write report.html"
        assert "dbbench report: bench/candidate" in report.read_text()
