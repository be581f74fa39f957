"""Reads routed to read replicas, and a clean stop on SIGTERM (real MariaDB)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import mysql.connector
import pytest
import yaml

from dbbench_runner.running import run_step
from tests.fixtures.mariadb import MariaDBServer
from tests.support.runner_files import check_results, mariadb_target, step

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    ("preference", "found"), [("secondaryPreferred", True), ("primary", False)]
)
def test_reads_go_to_the_replica_only_when_allowed(
    mariadb: MariaDBServer,
    mariadb_factory: Callable[..., MariaDBServer],
    preference: str,
    found: bool,
    tmp_path: Path,
) -> None:
    # Two unrelated servers: the "replica" holds the records, the primary an
    # empty table. Reads find rows only if they really went to the replica.
    replica = mariadb_factory(server_id=2)
    # Replicas carry the primary's accounts (replicated); give it the same password.
    conn = mysql.connector.connect(**replica.connect_args())
    try:
        for host in ("127.0.0.1", "%"):
            conn.cursor().execute(
                f"ALTER USER 'root'@'{host}' IDENTIFIED BY '{mariadb.root_password}'"
            )
    finally:
        conn.close()
    replica.root_password = mariadb.root_password
    database = f"r_{uuid.uuid4().hex[:12]}"
    assert (
        run_step(
            step(mariadb_target(replica, database), "ycsb", 100, {"type": "insert"}),
            tmp_path / "load",
        )
        == 0
    )
    # Reads of the primary's empty table find nothing: errors (not found), counted;
    # the limit is lifted to see where the reads went.
    phase = {"type": "mix", "mix": {"read": 1}, "operations": 60, "readPreference": preference,
             "maxErrorRate": 1.0}  # fmt: skip
    primary = mariadb_target(
        mariadb, database, replicas=[{"host": "127.0.0.1", "port": replica.port}]
    )
    assert run_step(step(primary, "ycsb", 100, phase), tmp_path / "reads") == 0
    summary = check_results(tmp_path / "reads", operations=60)
    read = summary["operationsByType"]["read"]
    rows = 60 if found else 0
    assert (read["rows"], read["found"], read["notFound"]) == (rows, rows, 60 - rows)


@contextmanager
def long_running_step(
    server: MariaDBServer, tmp_path: Path, target_rate: int
) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """A loaded table, then a 10-minute mix run as a subprocess, yielded once it
    reports progress; killed on the way out if the test left it running."""
    database = f"s_{uuid.uuid4().hex[:12]}"
    load = step(mariadb_target(server, database), "flat45", 100, {"type": "insert"})
    assert run_step(load, tmp_path / "load") == 0
    raw = {
        "target": mariadb_target(server, database),
        "dataset": {"shape": "flat45", "records": 100},
        "phase": {
            "name": "long",
            "type": "mix",
            "mix": {"read": 1},
            "duration": "10m",
            "targetRate": target_rate,
        },
        "threads": 2,
        "processes": 2,
        "progressEvery": 0.5,
    }
    path = tmp_path / "step.yaml"
    path.write_text(yaml.safe_dump(raw))
    out = tmp_path / "run"
    with subprocess.Popen(
        [sys.executable, "-m", "dbbench_runner", "run", "--config", str(path), "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        try:
            deadline = time.monotonic() + 60
            while not (out / "progress.json").exists() and time.monotonic() < deadline:
                time.sleep(0.2)
            yield process, out
        finally:
            if process.poll() is None:
                process.kill()


def test_sigterm_stops_cleanly_with_results(mariadb: MariaDBServer, tmp_path: Path) -> None:
    with long_running_step(mariadb, tmp_path, target_rate=200) as (process, out):
        time.sleep(1.0)
        process.send_signal(signal.SIGTERM)
        stdout, _ = process.communicate(timeout=60)
    assert process.returncode == 0
    assert "stopped" in stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "stopped"
    check_results(out, operations=summary["operations"])
    assert 100 <= summary["operations"] <= 2000


def _children(parent: int) -> list[int]:
    return [int(c) for c in Path(f"/proc/{parent}/task/{parent}/children").read_text().split()]


def _worker_pids(parent: int) -> list[int]:
    """The runner's worker processes: its fork server's children (workers.py), not
    multiprocessing's resource tracker."""
    for child in _children(parent):
        command = Path(f"/proc/{child}/cmdline").read_bytes()
        if b"multiprocessing.forkserver" in command:
            return _children(child)
    return []


def _running(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie has done its work)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def test_a_killed_worker_fails_the_run_instead_of_hanging(
    mariadb: MariaDBServer, tmp_path: Path
) -> None:
    with long_running_step(mariadb, tmp_path, target_rate=100) as (process, _):
        workers = _worker_pids(process.pid)
        assert len(workers) == 2
        os.kill(workers[0], signal.SIGKILL)  # as the OOM killer would
        _, stderr = process.communicate(timeout=60)
    assert process.returncode == 5
    assert "worker process" in stderr


def test_workers_stop_when_the_runner_is_killed(mariadb: MariaDBServer, tmp_path: Path) -> None:
    """An orphaned run never loads the database: killed by SIGKILL, the runner
    leaves nothing behind (its workers hear of it through a pipe it alone held)."""
    with long_running_step(mariadb, tmp_path, target_rate=100) as (process, _):
        workers = _worker_pids(process.pid)
        assert len(workers) == 2
        assert all(_running(pid) for pid in workers)
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
        deadline = time.monotonic() + 30
        while any(map(_running, workers)) and time.monotonic() < deadline:
            time.sleep(0.2)
    assert not [pid for pid in workers if _running(pid)]
