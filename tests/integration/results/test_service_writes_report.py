"""The results service renders report.html when a run's summary.json arrives
(uploaded last by the operator): a real service, real files, over HTTP."""

from __future__ import annotations

import time
import urllib.request
from pathlib import Path

import pytest

from dbbench_local.results_service import running_results_service
from tests.fixtures.result_sets import ResultSets
from tests.support.browser_server import browser_server
from tests.support.series_runs import VIEW_REPORTS, put_file, upload, write_run

pytestmark = pytest.mark.integration


def test_report_is_written_next_to_the_results(result_sets: ResultSets, tmp_path: Path) -> None:
    source = result_sets.candidate
    with running_results_service(tmp_path / "service") as service:
        run = source.run
        files = sorted(p for p in source.path.rglob("*") if p.is_file() and p.name != "report.html")
        summary = source.path / "summary.json"
        for path in [p for p in files if p != summary] + [summary]:
            put_file(service, run, source.path, path)
        report = service.root / run.namespace / run.name / run.uid / "report.html"
        deadline = time.monotonic() + 120
        while not report.is_file() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert report.is_file(), "the service did not write report.html"
        assert "dbbench report: bench/candidate" in report.read_text()


def test_a_stop_finishes_the_report_being_drawn_and_names_the_queued_ones(tmp_path: Path) -> None:
    """Eight summaries arrive at once (a schedule's backlog), then SIGTERM: the
    service does not draw the backlog before it exits; each run has its whole
    report or is named in the log as left without one."""
    runs = [write_run(tmp_path / "source", "bench", "nightly", i, 1.0).run for i in range(8)]
    with running_results_service(tmp_path / "service") as service:
        summaries = []
        for run in runs:
            run_dir = tmp_path / "source" / run.namespace / run.name / run.uid
            for path in sorted(p for p in run_dir.rglob("*") if p.is_file()):
                if path == run_dir / "summary.json":
                    summaries.append((run, run_dir, path))
                else:
                    put_file(service, run, run_dir, path)
        for run, run_dir, path in summaries:  # back to back: each queues a report
            put_file(service, run, run_dir, path)
        service.stop()
        log = service.log.read_text()
        written, dropped = [], []
        for run in runs:
            run_dir = service.root / run.namespace / run.name / run.uid
            if (run_dir / "report.html").is_file():
                assert (run_dir / "report.html").read_text().rstrip().endswith("</html>")
                written.append(run.name)
            else:
                assert f"report for {run_dir} not rendered: the service stopped first" in log
                dropped.append(run.name)
        assert dropped, f"every report was drawn before the service stopped: {written}"
        assert not list(service.root.rglob(".report.html.*")), "a partly written report"


def test_with_reports_at_view_none_is_drawn_at_upload_and_the_browser_draws_it(
    tmp_path: Path,
) -> None:
    """`--reports=view` (the chart's `results.reports: view`): a summary's arrival
    queues no report, so a stop right after it neither finishes nor drops one, and
    the browser draws the report when the run is opened."""
    with running_results_service(tmp_path / "service", extra_args=VIEW_REPORTS) as service:
        stored = upload(service, tmp_path / "source", "bench", 1, 1.0)  # summary.json last
        service.stop()  # as in the test above: a queued or running report would show here
        log = service.log.read_text()
        namespace, name, uid = stored.relative_to(service.root).parts
        assert (stored / "summary.json").is_file()
        assert not (stored / "report.html").exists()
        assert "reports at view" in log
        assert "report for" not in log, log
        assert "report.html" not in log, log
        with browser_server(service.root, tmp_path / "browser.log") as url:
            page = (
                urllib.request.urlopen(f"{url}/runs/{namespace}/{name}/{uid}/", timeout=60)
                .read()
                .decode()
            )
    assert f"dbbench report: {namespace}/{name}" in page
    assert page.rstrip().endswith("</html>")
    assert not (stored / "report.html").exists()  # drawn for the view, not stored
