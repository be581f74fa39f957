"""The local node's Oracle MySQL image: its entrypoint, run in the image's own root.

hack/cluster/images.sh builds the image from a cached Debian unstable root
(.cluster/roots/mysql). These tests run hack/cluster/mysql/docker-entrypoint.sh
chrooted in that root as uid 999 with the chart's flags, so what is checked is
the image's content (packages, /etc/my.cnf, directories) and the official
image's environment contract, without a cluster or a container engine. The
server listens on 127.0.0.1 only; every server is stopped by its PID.
"""

from __future__ import annotations

import gzip
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
    MemoryCgroup,
    Server,
    empty_volume,
    root_skip_reason,
    stop,
)

IMAGE = ImageRoot(
    root=ROOTS / "mysql",
    entrypoint_dir=REPO / "hack/cluster/mysql",
    mount_point="/var/lib/mysql",
    tmpfs_dirs=("/run/mysqld",),
)
# Quotes, a backslash, a dollar and a hash: the entrypoint must escape them in
# SQL and in the client's options file.
PASSWORD = "pa'ss\\wo\"rd$HOME #1"
_SKIP = root_skip_reason(ROOTS / "mysql.stamp", "mysql")

pytestmark = [pytest.mark.integration, pytest.mark.skipif(_SKIP is not None, reason=_SKIP or "")]


def _start(
    volume: Path, port: int, env: Mapping[str, str], log: Path, cgroup: MemoryCgroup | None = None
) -> Server:
    """The chart's container command and flags (charts/mysql, engine mysql)."""
    command = [
        "bash", "-ec", 'exec /mnt/docker-entrypoint.sh "$@" --server-id=1 --report-host=db-0.db',
        "entrypoint", "mysqld", "--datadir=/var/lib/mysql/data", "--skip-name-resolve",
        "--log-bin=binlog", "--relay-log=relay-bin", "--gtid-mode=ON",
        "--enforce-gtid-consistency=ON", "--innodb_buffer_pool_size=64M",
        f"--port={port}", "--bind-address=127.0.0.1", "--mysqlx=OFF",
    ]  # fmt: skip
    return IMAGE.start(volume, port, env, command, log, cgroup)


def _connect(port: int, user: str = "root", password: str = PASSWORD, **extra: Any) -> Any:
    return mysql.connector.connect(
        host="127.0.0.1", port=port, user=user, password=password, connection_timeout=5, **extra
    )


def _wait_ready(server: Server, password: str = PASSWORD, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            pytest.fail(f"the server exited with {server.process.returncode}:\n{server.output()}")
        try:
            _connect(server.port, password=password).close()
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
    "MYSQL_ROOT_PASSWORD": PASSWORD,
    "MYSQL_DATABASE": "bench_db",
    "MYSQL_USER": "bench",
    "MYSQL_PASSWORD": "b'e\\nch",
}


def test_initialises_an_empty_volume_with_the_official_contract(
    volume: Path, tmp_path: Path, servers: list[Server]
) -> None:
    server = _start(volume, free_port(), ENV, tmp_path / "server.log")
    servers.append(server)
    _wait_ready(server)

    conn = _connect(server.port)
    cur = conn.cursor()
    cur.execute("SELECT CURRENT_USER(), @@version, @@version_comment, @@datadir, @@server_id")
    user, version, comment, datadir, server_id = cur.fetchone()
    assert user == "root@%"
    # Oracle MySQL from Debian (MariaDB says "-MariaDB" in its version).
    assert str(version).startswith("9.")
    assert "MariaDB" not in str(version)
    assert comment == "(Debian)"
    assert datadir == "/var/lib/mysql/data/"
    assert server_id == 1
    cur.execute("SELECT @@gtid_mode, @@secure_file_priv, @@skip_name_resolve")
    assert cur.fetchone() == ("ON", "/var/lib/mysql-files/", 1)
    cur.execute("SELECT User, Host FROM mysql.user WHERE User IN ('root', 'bench', '')")
    assert set(cur.fetchall()) == {("root", "%"), ("root", "localhost"), ("bench", "%")}
    cur.execute("SHOW DATABASES")
    databases = {row[0] for row in cur.fetchall()}
    assert "bench_db" in databases
    assert "test" not in databases
    # Time zones are loaded (the official image's default) ...
    cur.execute("SELECT COUNT(*) FROM mysql.time_zone_name")
    assert cur.fetchone()[0] > 100
    # ... and nothing of the initialisation is in the binary log: a replica made
    # from this image has no errant GTIDs.
    cur.execute("SELECT @@gtid_executed")
    assert cur.fetchone() == ("",)
    conn.close()

    app = _connect(server.port, user="bench", password="b'e\\nch", database="bench_db")
    app.cursor().execute("CREATE TABLE t (id INT PRIMARY KEY)")
    app.close()

    with pytest.raises(mysql.connector.Error) as refused:
        _connect(server.port, password="wrong")
    assert refused.value.errno == errorcode.ER_ACCESS_DENIED_ERROR

    # The server runs as uid 999 and the data is on the volume.
    assert (volume / "data/mysql").is_dir()
    assert (volume / "data/mysql.ibd").stat().st_uid == 999


def test_init_files_run_once_after_the_accounts(
    volume: Path, tmp_path: Path, servers: list[Server]
) -> None:
    # /mnt holds the entrypoint and the init files; the container command copies
    # them into a fresh /docker-entrypoint-initdb.d (a tmpfs) before the entrypoint.
    mnt = tmp_path / "mnt"
    (mnt / "initdb").mkdir(parents=True)
    (mnt / "docker-entrypoint.sh").write_bytes(
        (IMAGE.entrypoint_dir / "docker-entrypoint.sh").read_bytes()
    )
    (mnt / "docker-entrypoint.sh").chmod(0o755)
    (mnt / "initdb" / "1-table.sql").write_text("CREATE TABLE seeded (v VARCHAR(10));\n")
    with gzip.open(mnt / "initdb" / "2-rows.sql.gz", "wt") as rows:
        rows.write("INSERT INTO seeded VALUES ('gz');\n")
    (mnt / "initdb" / "3-note.sh").write_text('echo "init script ran as $(id -u)"\n')
    image = ImageRoot(IMAGE.root, mnt, IMAGE.mount_point,
                      (*IMAGE.tmpfs_dirs, "/docker-entrypoint-initdb.d"))  # fmt: skip
    port = free_port()
    command = [
        "bash", "-ec",
        'cp /mnt/initdb/* /docker-entrypoint-initdb.d/ && exec /mnt/docker-entrypoint.sh "$@"',
        "entrypoint", "mysqld", "--datadir=/var/lib/mysql/data", "--server-id=1",
        "--log-bin=binlog", "--gtid-mode=ON", "--enforce-gtid-consistency=ON",
        "--innodb_buffer_pool_size=64M", f"--port={port}", "--bind-address=127.0.0.1",
        "--mysqlx=OFF",
    ]  # fmt: skip
    env = {**ENV, "MYSQL_INITDB_SKIP_TZINFO": "1"}
    server = image.start(volume, port, env, command, tmp_path / "server.log")
    servers.append(server)
    _wait_ready(server)
    conn = _connect(server.port, database="bench_db")
    cur = conn.cursor()
    cur.execute("SELECT v FROM seeded")
    assert cur.fetchall() == [("gz",)]
    cur.execute("SELECT COUNT(*) FROM mysql.time_zone_name")
    assert cur.fetchone() == (0,)
    conn.close()
    assert "init script ran as 999" in server.output()


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
        volume, free_port(), {**ENV, "MYSQL_ROOT_PASSWORD": "another"}, tmp_path / "second.log"
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
    assert "MYSQL_ROOT_PASSWORD" in server.output()
    assert not (volume / "data/mysql").exists()


def test_mysql_user_root_is_refused(volume: Path, tmp_path: Path) -> None:
    env = {"MYSQL_ROOT_PASSWORD": "x", "MYSQL_USER": "root", "MYSQL_PASSWORD": "y"}
    server = _start(volume, free_port(), env, tmp_path / "server.log")
    try:
        assert server.process.wait(timeout=60) != 0
    finally:
        stop(server)
    assert "MYSQL_USER=root" in server.output()


def test_root_password_from_a_file(volume: Path, tmp_path: Path, servers: list[Server]) -> None:
    # The file sits on the volume (mounted at /var/lib/mysql), readable by 999.
    (volume / "root-password").write_text("from-a-file")
    env = {"MYSQL_ROOT_PASSWORD_FILE": "/var/lib/mysql/root-password"}
    server = _start(volume, free_port(), env, tmp_path / "server.log")
    servers.append(server)
    _wait_ready(server, password="from-a-file")
