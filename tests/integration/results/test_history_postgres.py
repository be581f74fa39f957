"""The series index in a real PostgreSQL (DBBENCH_RESULTS_HISTORY_DSN, the chart's
results.history.postgres.*): filled from the claim's files when its table is
missing, kept as summaries are stored, refilled when dropped, read by the
browser; and a database that cannot be reached stops neither an upload nor
the series' answer (the files give it)."""

from __future__ import annotations

import json
import secrets
import socket
import time
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dbbench_contract.history import SeriesHistory
from dbbench_contract.tokens import series_token
from dbbench_local.postgres import PostgresServer
from dbbench_local.results_service import ResultsService, running_results_service
from dbbench_results.history.index import series_from_files
from tests.fixtures.results_service import request
from tests.support.browser_server import browser_server
from tests.support.series_runs import VIEW_REPORTS, upload, write_run

pytestmark = pytest.mark.integration
NS = "bench"


def _series(service: ResultsService) -> SeriesHistory:
    token = series_token(service.key, NS, "nightly")
    status, body = request(service, "GET", f"/v1/series/{NS}/nightly", token=token)
    assert status == 200, body
    return SeriesHistory.from_json(body)


def wait_for_log(service: ResultsService, text: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while text not in service.log.read_text():
        assert time.monotonic() < deadline, f"not logged: {text}"
        time.sleep(0.2)


def _dsn(server: PostgresServer, dbname: str) -> str:
    args: dict[str, Any] = server.connect_args(dbname)
    return " ".join(f"{k}={v}" for k, v in args.items())


def test_the_index_lives_in_postgresql_and_is_rebuilt_from_the_files(
    postgres_server: PostgresServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dbname = f"history_{secrets.token_hex(4)}"
    with postgres_server.connect() as admin:
        admin.execute(f"CREATE DATABASE {dbname}")
    monkeypatch.setenv("DBBENCH_RESULTS_HISTORY_DSN", _dsn(postgres_server, dbname))
    root = tmp_path / "claim"
    rng = np.random.default_rng(6)
    for i in range(3):  # on the claim before the service (and its table) exist
        write_run(root, NS, "nightly", i, 1 + 0.02 * float(rng.standard_normal()))
    (tmp_path / "service").mkdir()
    with running_results_service(
        tmp_path / "service", root=root, extra_args=VIEW_REPORTS
    ) as service:
        # Filled at start, from the runs already on the claim.
        built = "history index dbbench_history_points built from 3 run summaries"
        wait_for_log(service, built)
        for i in range(3, 6):
            upload(service, tmp_path / "source", NS, i, 1 + 0.02 * float(rng.standard_normal()))
        upload(service, tmp_path / "source", NS, 6, 0.5)
        answer = _series(service)
        with postgres_server.connect(dbname) as db:
            uids = db.execute("SELECT count(DISTINCT uid) FROM dbbench_history_points").fetchone()
            db.execute("DROP TABLE dbbench_history_points")  # damaged: refilled on next use
        again = _series(service)
        with (
            browser_server(root, tmp_path / "browser.log") as url,
            urllib.request.urlopen(f"{url}/api/series/{NS}/nightly", timeout=30) as page,
        ):
            browsed = SeriesHistory.from_wire(json.loads(page.read()))
    assert uids == (7,)
    assert not (root / ".index").exists(), "no SQLite index beside a PostgreSQL one"
    assert answer.runs == 7
    assert answer.points == tuple(series_from_files(root, NS, "nightly"))
    assert answer.verdict is not None
    assert (answer.verdict.run, answer.verdict.reason) == ("nightly-6", "Regression")
    assert again == answer
    assert browsed == answer
    log = service.log.read_text()
    assert "history index dbbench_history_points built from 7 run summaries" in log
    assert "read from the files" not in log


def test_an_unreachable_database_stops_no_upload_and_no_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("DBBENCH_RESULTS_HISTORY_DSN",
                       f"host=127.0.0.1 port={port} user=x password=y dbname=z")  # fmt: skip
    with running_results_service(tmp_path / "service", extra_args=VIEW_REPORTS) as service:
        for i in range(5):
            upload(service, tmp_path / "source", NS, i, 1.0 + i / 1000)
        answer = _series(service)
    assert answer.runs == 5
    assert answer.points == tuple(series_from_files(service.root, NS, "nightly"))
    assert "read from the files" in service.log.read_text()
