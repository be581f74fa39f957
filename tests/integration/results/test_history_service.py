"""The results service indexes each run by series as its summary.json arrives:
a real service, real files over HTTP, its SQLite index on the claim."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dbbench_contract.history import SeriesHistory
from dbbench_contract.tokens import run_token, series_token
from dbbench_local.results_service import ResultsService, running_results_service
from dbbench_results.history.index import SqliteIndex, series_from_files
from tests.fixtures.results_service import request
from tests.support.series_runs import VIEW_REPORTS, upload

pytestmark = pytest.mark.integration


def wait_for(path: Path, seconds: float = 120) -> bool:
    deadline = time.monotonic() + seconds
    while not path.is_file() and time.monotonic() < deadline:
        time.sleep(0.5)
    return path.is_file()


def test_stored_runs_are_indexed_and_a_damaged_index_is_rebuilt(tmp_path: Path) -> None:
    with running_results_service(tmp_path / "service", extra_args=VIEW_REPORTS) as service:
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
        # Nothing can make the index: its directory's name is taken by a file
        # (after the service built it at start).
        index_dir = service.root / ".index"
        assert wait_for(index_dir / "history.sqlite3", 30), "no index built at start"
        shutil.rmtree(index_dir)
        index_dir.write_bytes(b"in the way")
        run_dir = upload(service, tmp_path / "source", "bench", 0, 1.0)
        assert (run_dir / "summary.json").is_file()
        assert wait_for(run_dir / "report.html"), "no report while the index is unusable"
    assert "history index" in service.log.read_text()


def get_series(service: ResultsService, path: str, token: str | None) -> tuple[int, Any]:
    status, body = request(service, "GET", path, token=token)
    return status, json.loads(body)


def test_the_series_answers_its_points_change_points_and_verdicts(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    speeds = [1 + 0.02 * float(rng.standard_normal()) for _ in range(8)] + [0.5]
    with running_results_service(tmp_path / "service", extra_args=VIEW_REPORTS) as service:
        for i, speed in enumerate(speeds):
            upload(service, tmp_path / "source", "bench", i, speed)
        upload(service, tmp_path / "source", "bench", 20, 1.0, series=None)
        token = series_token(service.key, "bench", "nightly")
        status, body = get_series(service, "/v1/series/bench/nightly", token)
        assert status == 200, body
        answer = SeriesHistory.from_wire(body)
        assert answer.runs == 9
        assert answer.points == tuple(series_from_files(service.root, "bench", "nightly"))
        assert answer.verdict is not None
        assert (answer.verdict.run, answer.verdict.reason) == ("nightly-8", "Regression")
        assert answer.verdict.message.startswith("opsPerSecond of db/load/all: 82")
        assert {c.run for c in answer.change_points} == {"nightly-8"}
        status, body = get_series(service, "/v1/series/bench/nightly?run=nightly-5", token)
        assert SeriesHistory.from_wire(body).verdict.reason == "NoChange"  # type: ignore[union-attr]
        status, body = get_series(service, "/v1/series/bench/nightly?run=nightly-1", token)
        assert SeriesHistory.from_wire(body).verdict.reason == "NotJudged"  # type: ignore[union-attr]
        # Refused: no token, a run's token, another series' token, a name that is none.
        assert get_series(service, "/v1/series/bench/nightly", None)[0] == 401
        run_token_0 = run_token(
            service.key, "bench", "nightly-0", "00000000-0000-4000-8000-000000000000"
        )
        assert get_series(service, "/v1/series/bench/nightly", run_token_0)[0] == 403
        other = series_token(service.key, "bench", "weekly")
        assert get_series(service, "/v1/series/bench/nightly", other)[0] == 403
        assert get_series(service, "/v1/series/bench/Night_ly", token)[0] == 400
        empty = get_series(service, "/v1/series/bench/weekly", other)[1]
        assert (empty["runs"], empty["points"], empty["verdict"]) == (0, [], None)
