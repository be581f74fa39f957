"""The runner's uploads against the real results service: retried across a restart
until the Job's deadline, ended at that deadline saying so, and a refusal that
retrying cannot change fails at once."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from dbbench_local.results_service import ResultsService
from dbbench_runner.uploading import (
    DEADLINE_MARGIN_S,
    PROGRESS,
    Destination,
    ProgressForwarder,
    UploadFailedError,
    put,
    upload_results,
)
from tests.fixtures.results_service import RUN_A, token_for

pytestmark = pytest.mark.integration

STEP = "db/load/1"


def destination(service: ResultsService, token: str | None = None) -> Destination:
    return Destination(
        url=service.url, token=token or token_for(service, RUN_A), run=RUN_A.path, step=STEP, pod=0
    )


@pytest.fixture
def results(tmp_path: Path) -> Iterator[Path]:
    out = tmp_path / "out"
    (out / "histograms").mkdir(parents=True)
    (out / "histograms" / "read.hlog").write_bytes(b"h" * 900_000)  # sent from disk, streamed
    (out / "series-ops.csv").write_text("records,ops\n1,2\n")
    (out / "summary.json").write_text('{"operations": 1}')
    return out


def test_uploads_wait_out_a_restarting_service_until_the_jobs_deadline(
    service: ResultsService, results: Path
) -> None:
    deadline = datetime.now(UTC) + timedelta(seconds=90)
    service.stop(kill=True)
    outcome: list[object] = []

    def upload() -> None:
        try:
            outcome.append(upload_results(destination(service), results, deadline))
        except UploadFailedError as exc:
            outcome.append(exc)

    start = time.monotonic()
    thread = threading.Thread(target=upload)
    thread.start()
    time.sleep(20)  # down for 20 s: several attempts fail, none gives up
    assert thread.is_alive(), outcome
    service.start()
    thread.join(timeout=60)
    took = time.monotonic() - start
    assert outcome == [3], outcome
    assert 20 < took < 60
    pod = service.root / RUN_A.path / STEP / "pod-0"
    files = [path for path in results.rglob("*") if path.is_file()]
    assert files
    for path in files:
        assert (pod / path.relative_to(results)).read_bytes() == path.read_bytes()


def test_an_unreachable_service_fails_the_upload_at_the_deadline_not_before(
    service: ResultsService, results: Path
) -> None:
    service.stop(kill=True)
    deadline = datetime.now(UTC) + timedelta(seconds=DEADLINE_MARGIN_S + 12)
    start = time.monotonic()
    with pytest.raises(UploadFailedError) as failed:
        put(destination(service), "summary.json", results / "summary.json", deadline=deadline)
    took = time.monotonic() - start
    assert 11 < took < 16, took
    message = str(failed.value)
    assert "Connection refused" in message
    assert f"until the Job's deadline ({deadline:%Y-%m-%dT%H:%M:%SZ})" in message


def test_a_refusal_that_cannot_change_fails_at_once(service: ResultsService, results: Path) -> None:
    deadline = datetime.now(UTC) + timedelta(minutes=10)
    start = time.monotonic()
    with pytest.raises(UploadFailedError, match="HTTP 403"):
        put(destination(service, token="0" * 64), "summary.json", results / "summary.json",
            deadline=deadline)  # fmt: skip
    assert time.monotonic() - start < 5


def test_progress_before_its_first_write_is_silent_and_a_failed_send_says_best_effort(
    service: ResultsService, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    forwarder = ProgressForwarder(destination(service), out, every=60)
    with caplog.at_level(logging.WARNING, logger="dbbench_runner.uploading"):
        forwarder.send_if_changed()  # no progress.json yet: nothing to say
        assert caplog.records == []
        (out / PROGRESS).write_text('{"operations": 5}')
        forwarder.send_if_changed()
        assert caplog.records == []
        sent = service.root / RUN_A.path / STEP / "pod-0" / PROGRESS
        assert sent.read_text() == '{"operations": 5}'
        service.stop(kill=True)
        (out / PROGRESS).write_text('{"operations": 9}')
        os.utime(out / PROGRESS, (time.time() + 5, time.time() + 5))  # a new mtime, surely
        forwarder.send_if_changed()
    [warning] = [r.getMessage() for r in caplog.records]
    assert "progress not sent" in warning
    assert "gave up after 1 of 1 attempts" in warning
    assert "budget" not in warning
    assert "deadline" not in warning
