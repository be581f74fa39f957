"""The results service indexes each run by series as its summary.json arrives:
a real service, real files over HTTP, its SQLite index on the claim."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from dbbench_contract.tokens import run_token
from dbbench_local.results_service import ResultsService, running_results_service
from dbbench_results.history.index import SqliteIndex, series_from_files
from tests.fixtures.results_service import request
from tests.support.series_runs import write_run

pytestmark = pytest.mark.integration


def upload(service: ResultsService, source: Path, namespace: str, index: int,
           factor: float, series: str | None = "nightly") -> Path:  # fmt: skip
    """Write a run of the series under `source`, upload its files (summary.json
    last, as the operator does); the run's directory on the service's claim."""
    summary = write_run(source, namespace, series, index, factor)
    run = summary.run
    run_dir = source / run.namespace / run.name / run.uid
    token = run_token(service.key, run.namespace, run.name, run.uid)
    files = sorted(p for p in run_dir.rglob("*") if p.is_file() and p.name != "report.html")
    first = [p for p in files if p != run_dir / "summary.json"]
    for path in [*first, run_dir / "summary.json"]:
        status, body = request(
            service, "PUT", f"/v1/runs/{run.namespace}/{run.name}/{run.uid}/files/"
            f"{path.relative_to(run_dir)}", body=path.read_bytes(), token=token,
        )  # fmt: skip
        assert status == 201, body
    return service.root / run.namespace / run.name / run.uid


def wait_for(path: Path, seconds: float = 120) -> bool:
    deadline = time.monotonic() + seconds
    while not path.is_file() and time.monotonic() < deadline:
        time.sleep(0.5)
    return path.is_file()


def test_stored_runs_are_indexed_and_a_damaged_index_is_rebuilt(tmp_path: Path) -> None:
    with running_results_service(tmp_path / "service") as service:
        for i in range(3):
            upload(service, tmp_path / "source", "bench", i, 1.0)
        index_file = service.root / ".index" / "history.sqlite3"
        indexed = SqliteIndex(service.root, index_file).series("bench", "nightly")
        assert len({p.run for p in indexed}) == 3
        assert indexed == series_from_files(service.root, "bench", "nightly")
        index_file.write_bytes(b"garbage, not a database\n" * 200)
        upload(service, tmp_path / "source", "bench", 3, 1.0)
    again = SqliteIndex(service.root, index_file).series("bench", "nightly")
    assert [p.run for p in again if p.phase == "reads" and p.operation_type == "all"] == [
        f"nightly-{i}" for i in range(4)
    ]
    assert again == series_from_files(service.root, "bench", "nightly")
    assert list(index_file.parent.glob("history.sqlite3.damaged-*")), "moved aside, not deleted"


def test_a_run_is_stored_and_reported_while_the_index_cannot_be_used(tmp_path: Path) -> None:
    with running_results_service(tmp_path / "service") as service:
        # Nothing can make the index: its directory's name is taken by a file.
        (service.root / ".index").write_bytes(b"in the way")
        run_dir = upload(service, tmp_path / "source", "bench", 0, 1.0)
        assert (run_dir / "summary.json").is_file()
        assert wait_for(run_dir / "report.html"), "no report while the index is unusable"
    assert "history index" in service.log.read_text()
