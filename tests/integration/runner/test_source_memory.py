"""Loading dataset.source's files keeps the runner's memory flat in their size.

The real runner (`python -m dbbench_runner run`: its main process and one
worker process of 4 connections, each streaming the whole file and loading
its own rows) loads a gzipped CSV of vehicle tests into a real PostgreSQL,
then a file ten times larger, each process tracing its allocations
(memory_hook/sitecustomize.py, as test_runner_memory_mariadb.py). A reader
that kept the file, its rows or its keys would grow with them: 30,000 rows
are ~4 MiB of text, well above the share allowed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.postgres import PostgresServer
from tests.support.inspection_files import SEED, mapping, write_csv

pytestmark = pytest.mark.integration

HOOK = Path(__file__).with_name("memory_hook")
SMALL = 3_000
LARGE = 10 * SMALL
SHARE = 0.05  # as test_runner_memory_mariadb.py


@pytest.fixture
def databases(postgres_server: PostgresServer) -> Iterator[list[str]]:
    names: list[str] = []
    yield names
    with postgres_server.connect() as conn:
        for name in names:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def peaks(server: PostgresServer, database: str, records: int, tmp: Path) -> dict[str, int]:
    """The tracemalloc peaks (bytes) of the runner's main and worker processes loading
    a file of `records` rows."""
    claim = tmp / "claim"
    write_csv(claim / "tests.csv.gz", records)
    raw = {
        "target": {"name": "pg", "engine": "postgresql", "host": "127.0.0.1",
                   "port": server.port, "user": server.user, "password": server.password,
                   "database": database},
        "dataset": {"shape": "vehicle", "records": records, "seed": SEED, "sourceRoot": str(claim),
                    "source": {"claimName": "mot", "files": ["tests.csv.gz"], "format": "csv",
                               **mapping(empty=["Items"])}},
        "phase": {"name": "load", "type": "insert", "batchSize": 50},
        "threads": 4,
        "processes": 1,
    }  # fmt: skip
    path = tmp / "step.json"
    path.write_text(json.dumps(raw))
    folder = tmp / "peaks"
    folder.mkdir()
    python_path = os.pathsep.join(filter(None, [str(HOOK), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": python_path, "DBBENCH_TEST_PEAKS": str(folder)}
    runner = subprocess.Popen(
        [sys.executable, "-m", "dbbench_runner", "run", "--config", str(path),
         "--out", str(tmp / "out")],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        stdout, stderr = runner.communicate(timeout=600)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    assert runner.returncode == 0, stderr
    assert f"{records} records" in stdout  # every row loaded
    found: dict[str, int] = {}
    for report in folder.iterdir():
        role, peak, _ = report.read_text().split()
        if int(report.name) == runner.pid:
            found["main"] = int(peak)
        elif role == "worker":
            found["worker"] = int(peak)
    assert set(found) == {"main", "worker"}, found
    return found


def test_loading_files_keeps_the_runners_memory_flat_in_their_size(
    postgres_server: PostgresServer, databases: list[str], tmp_path: Path
) -> None:
    measured = {}
    for records in (SMALL, LARGE):
        databases.append(f"m_{uuid.uuid4().hex[:12]}")
        measured[records] = peaks(postgres_server, databases[-1], records, tmp_path / str(records))
    grown = {
        process: f"{small / 2**20:.2f} -> {measured[LARGE][process] / 2**20:.2f} MiB"
        for process, small in measured[SMALL].items()
        if measured[LARGE][process] > small * (1 + SHARE)
    }
    assert not grown, f"peaks for {SMALL:,} -> {LARGE:,} rows: {grown}"
