"""The local node's MariaDB image: its entrypoint, run in the image's own root.

hack/cluster/images.sh builds the image from a cached Debian root
(.cluster/roots/mariadb). These tests run hack/cluster/mariadb/docker-entrypoint.sh
chrooted in that root as uid 999 with the chart's flags, so what is checked is
the image's content without a cluster or a container engine. The server listens
on 127.0.0.1 only; every server is stopped by its PID.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import mysql.connector
import pytest
from mysql.connector import errorcode

from dbbench_local.mariadb import free_port
from tests.integration.images.image_support import (
    REPO,
    ROOTS,
    ImageRoot,
    Server,
    empty_volume,
    root_skip_reason,
    stop,
)

IMAGE = ImageRoot(
    root=ROOTS / "mariadb",
    entrypoint_dir=REPO / "hack/cluster/mariadb",
    mount_point="/var/lib/mysql",
    tmpfs_dirs=("/run/mysqld",),
)
# Quotes, a backslash and a dollar: the entrypoint must escape them in SQL.
PASSWORD = "pa'ss\\wo\"rd$HOME"
_SKIP = root_skip_reason(ROOTS / "mariadb.stamp", "mariadb")

pytestmark = [pytest.mark.integration, pytest.mark.skipif(_SKIP is not None, reason=_SKIP or "")]


def _start(
    volume: Path, port: int, env: Mapping[str, str], log: Path, image: ImageRoot = IMAGE
) -> Server:
    """The chart's container command and flags (charts/mysql, engine mariadb)."""
    command = [
        "bash", "-ec", 'exec /mnt/docker-entrypoint.sh "$@" --server-id=1 --report-host=db-0.db',
        "entrypoint", "mariadbd", "--datadir=/var/lib/mysql/data", "--skip-name-resolve",
        "--log-bin=mysql-bin", "--log-slave-updates=ON", "--binlog-format=ROW",
        "--relay-log=relay-bin", "--gtid-strict-mode=ON", "--innodb-buffer-pool-size=64M",
        f"--port={port}", "--bind-address=127.0.0.1",
    ]  # fmt: skip
    return image.start(volume, port, env, command, log)


def _connect(port: int, user: str = "root", password: str = PASSWORD, **extra: Any) -> Any:
    return mysql.connector.connect(
        host="127.0.0.1", port=port, user=user, password=password, connection_timeout=5, **extra
    )


def _wait_ready(server: Server, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            pytest.fail(f"the server exited with {server.process.returncode}:\n{server.output()}")
        try:
            _connect(server.port).close()
        except mysql.connector.Error:
            time.sleep(0.5)
        else:
            return
    pytest.fail(f"no root login over TCP within {timeout} s:\n{server.output()}")


@pytest.fixture
def volume(tmp_path: Path) -> Path:
    return empty_volume(tmp_path / "volume")


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    started: list[Server] = []
    yield started
    for server in started:
        stop(server)


ENV = {
    "MARIADB_ROOT_PASSWORD": PASSWORD,
    "MARIADB_DATABASE": "bench_db",
    "MARIADB_USER": "bench",
    "MARIADB_PASSWORD": "b'e\\nch",
}


def test_initialises_an_empty_volume_with_the_official_contract(
    volume: Path, tmp_path: Path, servers: list[Server]
) -> None:
    server = _start(volume, free_port(), ENV, tmp_path / "server.log")
    servers.append(server)
    _wait_ready(server)

    conn = _connect(server.port)
    cur = conn.cursor()
    cur.execute("SELECT CURRENT_USER(), @@version, @@datadir, @@server_id")
    user, version, datadir, server_id = cur.fetchone()
    assert user == "root@%"
    assert str(version).startswith("11.8.")
    assert datadir == "/var/lib/mysql/data/"
    assert server_id == 1
    cur.execute("SELECT User, Host FROM mysql.user ORDER BY User, Host")
    accounts = set(cur.fetchall())
    assert ("root", "%") in accounts
    assert ("root", "localhost") in accounts
    assert not [a for a in accounts if a[0] == ""], accounts
    assert ("root", "127.0.0.1") not in accounts
    # The initial accounts are not in the binary log (no errant GTIDs on replicas).
    cur.execute("SELECT @@gtid_binlog_pos")
    assert cur.fetchone() == ("",)
    conn.close()

    app = _connect(server.port, user="bench", password="b'e\\nch", database="bench_db")
    app.cursor().execute("CREATE TABLE t (id INT PRIMARY KEY)")
    app.close()

    with pytest.raises(mysql.connector.Error) as refused:
        _connect(server.port, password="wrong")
    assert refused.value.errno == errorcode.ER_ACCESS_DENIED_ERROR

    # The server runs as uid 999, and the data is on the volume.
    assert (volume / "data/mysql").is_dir()
    assert (volume / "data/mysql").stat().st_uid == 999


def test_a_second_start_keeps_the_data_and_the_accounts(
    volume: Path, tmp_path: Path, servers: list[Server]
) -> None:
    first = _start(volume, free_port(), ENV, tmp_path / "first.log")
    servers.append(first)
    _wait_ready(first)
    conn = _connect(first.port, database="bench_db")
    cur = conn.cursor()
    cur.execute("CREATE TABLE kept (v VARCHAR(10))")
    cur.execute("INSERT INTO kept VALUES ('marker')")
    conn.commit()
    conn.close()
    stop(first)
    assert first.process.returncode == 0, first.output()

    # Another password now: a re-initialisation would apply it.
    second = _start(
        volume,
        free_port(),
        {**ENV, "MARIADB_ROOT_PASSWORD": "another"},
        tmp_path / "second.log",
    )
    servers.append(second)
    _wait_ready(second)
    assert "starting without initialisation" in second.output()
    assert "initialising" not in second.output()
    conn = _connect(second.port, database="bench_db")
    cur = conn.cursor()
    cur.execute("SELECT v FROM kept")
    assert cur.fetchall() == [("marker",)]
    conn.close()
    with pytest.raises(mysql.connector.Error):
        _connect(second.port, password="another")


def test_an_empty_volume_without_a_password_is_refused(volume: Path, tmp_path: Path) -> None:
    server = _start(volume, free_port(), {}, tmp_path / "server.log")
    try:
        assert server.process.wait(timeout=60) != 0
    finally:
        stop(server)
    assert "MARIADB_ROOT_PASSWORD" in server.output()
    assert not (volume / "data/mysql").exists()
