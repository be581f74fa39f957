"""A run that timed out part-way still gets its summary.json and report: the
operator's own code (`steps/collecting.summarize_ended`) against a real results service
holding the real files of the steps that completed; the service renders the
report; the report and the results browser say it failed, why, and which steps
have no results."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path

import pytest

from dbbench_contract.api import BenchmarkRunStatus, parse_spec
from dbbench_contract.run_summary import RunSummary
from dbbench_contract.tokens import run_token
from dbbench_local.results_service import ResultsService, running_results_service
from dbbench_operator.naming import RunRef
from dbbench_operator.settings import OperatorSettings
from dbbench_operator.specs.plan import plan
from dbbench_operator.specs.runner_job import step_dir
from dbbench_operator.status.recording import read_status
from dbbench_operator.steps import collecting
from dbbench_results.run_list import scan
from tests.fixtures.result_sets import ResultSets
from tests.fixtures.results_service import request

pytestmark = pytest.mark.integration

FAILED = RunRef(name="timed-out", namespace="bench", uid="0b7e1c2a-0000-4000-8000-0000000000ff")
MESSAGE = "spec.timeout (0:30:00) exceeded; increase spec.timeout"


def settings_for(service: ResultsService) -> OperatorSettings:
    return OperatorSettings(results_url=service.url, results_key=service.key, pass_deadline=30)


def upload_completed_steps(service: ResultsService, source: Path, paths: list[str]) -> None:
    token = run_token(service.key, FAILED.namespace, FAILED.name, FAILED.uid)
    prefix = f"/v1/runs/{FAILED.namespace}/{FAILED.name}/{FAILED.uid}/files"
    for step in paths:
        files = [p for p in sorted((source / step).rglob("*")) if p.is_file()]
        assert files, step
        for path in files:
            status, body = request(service, "PUT", f"{prefix}/{path.relative_to(source)}",
                                   body=path.read_bytes(), token=token)  # fmt: skip
            assert status == 201, body


def failed_status(at_step: int, completed_at: datetime) -> BenchmarkRunStatus:
    return read_status(
        {
            "phase": "Failed",
            "startedAt": "2026-01-01T00:00:00Z",
            "completedAt": completed_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "message": MESSAGE,
            "conditions": [
                {"type": "Failed", "status": "True", "reason": "Timeout", "message": MESSAGE}
            ],
            "progress": {"step": at_step, "stepsDone": at_step - 1},
            "targets": [{"name": "safe"}, {"name": "fast"}],
        }
    )


class Cells(HTMLParser):
    """Text of every cell with a data-key, per table row's data-step."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, dict[str, str]] = {}
        self._step: str | None = None
        self._key: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "tr":
            self._step = values.get("data-step")
        if tag == "td":
            self._key = values.get("data-key")

    def handle_data(self, data: str) -> None:
        if self._step is not None and self._key:
            self.rows.setdefault(self._step, {})[self._key] = data
        elif self._key:
            self.rows.setdefault("-", {})[self._key] = data
        self._key = None


def test_a_timed_out_run_gets_its_summary_and_a_report_saying_so(
    result_sets: ResultSets, tmp_path: Path
) -> None:
    source = result_sets.candidate
    spec = parse_spec(source.spec)
    steps = plan(spec)
    completed = [s for s in steps if s.target == "safe"]  # the first target's steps ran
    at = len(completed) + 1  # the second target's first step was running
    with running_results_service(tmp_path / "service") as service:
        upload_completed_steps(service, source.path, [step_dir(s) for s in completed])
        status = failed_status(at, datetime.now(UTC))
        done, warning = collecting.summarize_ended(
            settings_for(service), FAILED, spec, status, datetime.now(UTC)
        )
        assert (done, warning) == (True, None)
        run_dir = service.root / FAILED.namespace / FAILED.name / FAILED.uid
        report = run_dir / "report.html"
        deadline = time.monotonic() + 120
        while not report.is_file() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert report.is_file(), (tmp_path / "service" / "results-service.log").read_text()[-3000:]

    summary = RunSummary.model_validate_json((run_dir / "summary.json").read_bytes())
    assert (summary.run.phase, summary.run.reason, summary.run.message) == (
        "Failed", "Timeout", MESSAGE)  # fmt: skip
    assert summary.run.current_step == at
    with_results = [e.step for e in summary.steps if e.result is not None]
    assert with_results == [s.index + 1 for s in completed]
    original = json.loads((source.path / "summary.json").read_text())
    for entry in summary.steps[: len(completed)]:  # the same results the steps recorded
        assert entry.result is not None
        assert entry.result.model_dump(mode="json") == original["steps"][entry.step - 1]["result"]

    html = report.read_text()
    assert "<title>dbbench report: bench/timed-out (failed)</title>" in html
    cells = Cells()
    cells.feed(html)
    assert cells.rows["-"]["reason"] == "Timeout"
    assert cells.rows["-"]["completed"] == f"{len(completed)} of {len(steps)}"
    assert cells.rows[str(at)]["why"] == f"running when the run ended (Timeout: {MESSAGE})"
    for later in range(at + 1, len(steps) + 1):
        assert cells.rows[str(later)]["why"] == f"not started: the run ended at step {at}"
    # The completed steps are reported as usual.
    assert 'data-section="throughput"' in html

    (entry,) = [e for e in scan(run_dir.parents[2]) if e.name == FAILED.name]
    assert entry.status == "failed (Timeout)"
    assert (entry.steps_done, entry.steps_total) == (len(completed), len(steps))


def test_a_summary_the_service_cannot_take_is_retried_then_given_up_saying_so(
    result_sets: ResultSets, tmp_path: Path
) -> None:
    spec = parse_spec(result_sets.candidate.spec)
    with running_results_service(tmp_path / "service") as service:
        settings = settings_for(service)
    # The service is stopped: not done while the grace lasts, then done with a warning.
    now = datetime.now(UTC)
    assert collecting.summarize_ended(settings, FAILED, spec, failed_status(1, now), now) == (
        False, None)  # fmt: skip
    ended = now - timedelta(seconds=collecting.SUMMARY_GRACE_S + 1)
    done, warning = collecting.summarize_ended(settings, FAILED, spec, failed_status(1, ended), now)
    assert done
    assert warning is not None
    assert warning[0] == "RunSummaryNotWritten"
    assert "unreachable" in warning[1]
