"""Unreachable databases and errors in the middle of a run, on a real MariaDB."""

from __future__ import annotations

import json
import re
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import mysql.connector
import pytest
import yaml

from dbbench_runner.config import parse_config
from dbbench_runner.datasets import generator_for
from dbbench_runner.drivers import DatabaseUnreachableError
from dbbench_runner.running import EXIT_ERROR_RATE, run_step
from dbbench_runner.schema import sql
from dbbench_runner.schema.mysql import DIALECT
from tests.fixtures.mariadb import MariaDBServer, free_port
from tests.support.runner_files import check_results, cli, mariadb_target, step

pytestmark = pytest.mark.integration


def test_unreachable_database_retries_then_fails_clearly(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there
    config = {
        "target": {
            "name": "gone",
            "engine": "mariadb",
            "host": "127.0.0.1",
            "port": port,
            "connectRetries": 3,
            "connectTimeout": 1,
        },
        "dataset": {"shape": "flat45", "records": 10},
        "phase": {"name": "load", "type": "insert"},
    }
    path = tmp_path / "step.yaml"
    path.write_text(yaml.safe_dump(config))
    started = time.monotonic()
    result = cli("run", "--config", str(path), "--out", str(tmp_path / "o"))
    elapsed = time.monotonic() - started
    assert result.returncode == 4
    assert f"cannot connect to mariadb at 127.0.0.1:{port} after 3 attempts" in result.stderr
    assert result.stderr.count("attempt ") >= 3  # each retry is logged
    assert 3 <= elapsed < 60  # backoff 1 s + 2 s, bounded


@pytest.fixture
def half_loaded(mariadb: MariaDBServer) -> dict[str, Any]:
    """A flat45 table already holding every 10th record: inserting all 200 collides 20 times."""
    database = f"e_{uuid.uuid4().hex[:12]}"
    config = step(mariadb_target(mariadb, database), "flat45", 200, {"type": "insert"})
    generator = generator_for(config.dataset)
    conn = mysql.connector.connect(**mariadb.connect_args())
    try:
        cursor = conn.cursor()
        cursor.execute(f"CREATE DATABASE `{database}`")
        cursor.execute(f"USE `{database}`")
        for statement in DIALECT.create_statements(generator, "client"):
            cursor.execute(statement)
        records = tuple(generator.record(n) for n in range(10, 201, 10))
        cursor.execute(
            DIALECT.insert_statement(generator, len(records)),
            sql.insert_params(generator, records),  # type: ignore[arg-type]
        )
        conn.commit()
    finally:
        conn.close()
    return mariadb_target(mariadb, database)


@pytest.mark.parametrize(
    ("max_rate", "exit_code", "status"), [(0.2, 0, "succeeded"), (0.05, EXIT_ERROR_RATE, "failed")]
)
def test_errors_mid_run_are_counted_and_fail_only_past_the_threshold(
    half_loaded: dict[str, Any],
    mariadb: MariaDBServer,
    max_rate: float,
    exit_code: int,
    status: str,
    tmp_path: Path,
) -> None:
    config = step(
        half_loaded, "flat45", 200, {"type": "insert", "maxErrorRate": max_rate, "reportEvery": 50}
    )
    assert run_step(config, tmp_path) == exit_code
    summary = check_results(tmp_path, operations=200, records=180)
    assert summary["errorsByType"] == {"insert:IntegrityError(1062)": 20}
    assert summary["errors"] == 20
    assert summary["operationsByType"]["insert"]["errors"] == 20
    assert summary["status"] == status
    assert (summary["reason"] is None) == (status == "succeeded")
    conn = mysql.connector.connect(**mariadb.connect_args(), database=half_loaded["database"])
    try:
        cursor = conn.cursor()
        cursor.execute("SELECT COUNT(*) FROM flat45")
        assert cursor.fetchone() == (200,)
    finally:
        conn.close()


def test_cli_run_then_merge(mariadb: MariaDBServer, tmp_path: Path) -> None:
    database = f"cli_{uuid.uuid4().hex[:12]}"
    secret = tmp_path / "password"
    secret.write_text(mariadb.root_password)
    base = {**mariadb_target(mariadb, database), "passwordFile": str(secret)}
    del base["password"]
    outs = []
    for pod in range(2):
        raw = {
            "target": base,
            "dataset": {"shape": "ycsb", "records": 300},
            "phase": {"name": "load", "type": "insert", "batchSize": 10, "reportEvery": 100},
            "pod": {"index": pod, "count": 2},
            "threads": 2,
            "progressEvery": 0.5,
        }
        parse_config(raw)
        path = tmp_path / f"step{pod}.yaml"
        path.write_text(yaml.safe_dump(raw))
        out = tmp_path / f"pod{pod}"
        result = cli("run", "--config", str(path), "--out", str(out))
        assert result.returncode == 0, result.stderr
        assert "[load] succeeded: 16 ops" in result.stdout  # 2 threads x ceil(75 / 10)
        # A progress line (progress.progress_line) with the finished load's figures.
        assert re.search(r"^\[load\] 16 ops  .* p99 .*  100\.0%  ETA 0s", result.stdout, re.M)
        progress = json.loads((out / "progress.json").read_text())
        assert progress["operations"] == 16
        assert progress["percent"] == 100.0
        outs.append(out)
    result = cli("merge", "--out", str(tmp_path / "all"), *map(str, outs), timeout=60)
    assert result.returncode == 0, result.stderr
    check_results(tmp_path / "all", operations=32, records=300)
    conn = mysql.connector.connect(**mariadb.connect_args(), database=database)
    try:
        cursor = conn.cursor()
        cursor.execute("SELECT COUNT(*), COUNT(DISTINCT YCSB_KEY) FROM usertable")
        assert cursor.fetchone() == (300, 300)
        cursor.execute(f"DROP DATABASE `{database}`")
    finally:
        conn.close()


def test_wrong_password_fails_at_once(mariadb: MariaDBServer, tmp_path: Path) -> None:
    bad = {**mariadb_target(mariadb, "nowhere"), "password": "wrong"}
    started = time.monotonic()
    with pytest.raises(DatabaseUnreachableError, match="Access denied"):
        run_step(step(bad, "flat45", 10, {"type": "insert"}), tmp_path)
    assert time.monotonic() - started < 5  # not retried: retrying cannot fix it


@pytest.mark.parametrize(
    ("library", "module", "key"),
    [("mysql-connector-python", "mysql.connector", "connection_timeout"),
     ("mysqlclient", "MySQLdb", "connect_timeout")],
)  # fmt: skip
def test_connect_timeout_is_whole_seconds_for_the_c_libraries(
    monkeypatch: pytest.MonkeyPatch, library: str, module: str, key: str
) -> None:
    """The connector's C extension raises TypeError on a float connection_timeout
    (seen in the trixie bench) and libmariadb takes whole seconds: the driver must
    round up, never pass 0.3 or 0."""
    import importlib  # noqa: PLC0415

    from dbbench_runner.drivers.mysql_clients import ConnectArgs, client_for  # noqa: PLC0415

    seen: dict[str, object] = {}

    def fake_connect(**kwargs: object) -> object:
        seen.update(kwargs)
        return object()

    monkeypatch.setattr(importlib.import_module(module), "connect", fake_connect)
    client = client_for(library)  # type: ignore[arg-type]
    client.connect(ConnectArgs("127.0.0.1", 3306, "root", "pw", None, timeout=0.3))
    assert seen[key] == 1
    assert isinstance(seen[key], int)


def test_mysql_driver_setting_is_checked_and_named(monkeypatch: pytest.MonkeyPatch) -> None:
    from dbbench_runner.config import ConfigError  # noqa: PLC0415
    from dbbench_runner.drivers.mysql_clients import client_for  # noqa: PLC0415

    raw = {
        "target": {"name": "x", "engine": "mariadb", "host": "127.0.0.1", "port": 1},
        "dataset": {"shape": "flat45", "records": 10},
        "phase": {"name": "p", "type": "insert"},
    }
    assert parse_config(raw).mysql_driver == "mysqlclient"
    with pytest.raises(ConfigError, match="mysqlDriver"):
        parse_config({**raw, "mysqlDriver": "pymysql"})
    # Not installed (an image without it): a config error that says what to do.
    monkeypatch.setitem(sys.modules, "MySQLdb", None)
    with pytest.raises(ConfigError, match="mysqlDriver: mysqlclient cannot be imported") as caught:
        client_for("mysqlclient")
    assert "mysql-connector-python" in str(caught.value)
