"""A first start killed part-way is initialised again on the next start.

The MySQL, MariaDB and PostgreSQL images' entrypoints initialise in
<datadir>/dbbench-initialising, write a completion mark there as the last
step and only then move its files into place (docs/decisions.md, "Atomic
first initialisation"). Here each entrypoint runs as the chart runs it
(tests/integration/images/test_*_image.py helpers: chrooted in the image's root as uid
999), is killed with SIGKILL at one point of its first start (the entrypoint
and every server it started, at once, as a container ends), and is started
again on the same volume: the next start says so, initialises again, and
serves the users and databases the operator expects. A start that finds the
mark with the move half done finishes the move.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from dbbench_local.mariadb import free_port
from tests.integration.images import test_mariadb_image as maria
from tests.integration.images import test_mysql_image as mysql_image
from tests.integration.images import test_postgres_image as pg
from tests.integration.images.image_support import (
    REPO,
    ImageRoot,
    Server,
    empty_volume,
    kill_all,
    stop,
    wait_for_output,
    wait_for_path,
)
from tests.integration.images.test_postgres_image import chart

pytestmark = pytest.mark.integration
__all__ = ["chart"]  # the PostgreSQL chart fixture, shared

STAGING = "dbbench-initialising"
MARK = ".dbbench-initialised"
REDONE = "the first initialisation did not complete"
# An init file that holds the first start once (after the accounts, the
# database and the grants exist, before the completion mark): /mnt/pause is
# there for the first start only.
PAUSE_SH = 'if [ -e /mnt/pause ]; then rm -f /mnt/pause; echo "init file pausing"; sleep 600; fi\n'


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    started: list[Server] = []
    yield started
    for server in reversed(started):
        stop(server)


def _killed_then_restarted(
    start: Callable[[str], Server], datadir: Path, at: Callable[[Server], None],
    servers: list[Server], pause: Path | None = None,
) -> Server:  # fmt: skip
    """First start until `at` returns, killed; then a second start (which never
    pauses in an init file), returned."""
    first = start("first.log")
    servers.append(first)
    at(first)
    kill_all(first)
    staging = datadir / STAGING
    # The kill landed inside the first initialisation: staged, never marked complete.
    assert staging.is_dir(), first.output()
    assert not (staging / MARK).exists(), first.output()
    if pause is not None:
        pause.unlink(missing_ok=True)
    second = start("second.log")
    servers.append(second)
    return second


def _restarted_cleanly(second: Server, datadir: Path) -> None:
    output = second.output()
    assert REDONE in output, output
    assert "initialisation done" in output, output
    assert not (datadir / STAGING).exists()


# -- MySQL -----------------------------------------------------------------------


def _mysql_mnt(tmp_path: Path) -> Path:
    """/mnt: the entrypoint and the init files (one pausing once)."""
    mnt = tmp_path / "mnt"
    (mnt / "initdb").mkdir(parents=True)
    shutil.copy2(mysql_image.IMAGE.entrypoint_dir / "docker-entrypoint.sh", mnt)
    (mnt / "initdb" / "1-table.sql").write_text("CREATE TABLE seeded (v INT);\n")
    (mnt / "initdb" / "2-pause.sh").write_text(PAUSE_SH)
    (mnt / "pause").touch()
    mnt.chmod(0o777)  # uid 999 removes /mnt/pause
    return mnt


def _mysql_starter(tmp_path: Path, volume: Path, mnt: Path, port: int) -> Callable[[str], Server]:
    image = ImageRoot(mysql_image.IMAGE.root, mnt, mysql_image.IMAGE.mount_point,
                      (*mysql_image.IMAGE.tmpfs_dirs, "/docker-entrypoint-initdb.d"))  # fmt: skip
    command = [
        "bash", "-ec",
        'cp /mnt/initdb/* /docker-entrypoint-initdb.d/ && exec /mnt/docker-entrypoint.sh "$@"',
        "entrypoint", "mysqld", "--datadir=/var/lib/mysql/data", "--server-id=1",
        "--skip-name-resolve", "--log-bin=binlog", "--relay-log=relay-bin", "--gtid-mode=ON",
        "--enforce-gtid-consistency=ON", "--innodb_buffer_pool_size=64M", f"--port={port}",
        "--bind-address=127.0.0.1", "--mysqlx=OFF",
    ]  # fmt: skip

    def start(log: str) -> Server:
        return image.start(volume, port, mysql_image.ENV, command, tmp_path / log)

    return start


def _mysql_serves(server: Server) -> None:
    """What the operator and the runner use: root from anywhere, the database, the
    user and its grant, the time zones, the init files' table."""
    mysql_image._wait_ready(server)
    conn = mysql_image._connect(server.port, database="bench_db")
    cur = conn.cursor()
    cur.execute("SELECT CURRENT_USER(), COUNT(*) FROM seeded")
    assert cur.fetchone() == ("root@%", 0)
    cur.execute("SELECT COUNT(*) FROM mysql.time_zone_name")
    assert cur.fetchone()[0] > 100
    conn.close()
    app = mysql_image._connect(server.port, user="bench", password=mysql_image.ENV[
        "MYSQL_PASSWORD"], database="bench_db")  # fmt: skip
    app.cursor().execute("CREATE TABLE IF NOT EXISTS t (id INT PRIMARY KEY)")
    app.close()


_MYSQL_POINTS: dict[str, Callable[[Path], Callable[[Server], None]]] = {
    # mysqld --initialize writing the system tablespace.
    "initialize": lambda data: lambda s: wait_for_path(s, data / STAGING / "mysql.ibd"),
    # The temporary server up, loading the time zones; no accounts yet.
    "time-zones": lambda data: lambda s: wait_for_output(s, "ready for connections"),
    # Accounts, database, grants and the first init file done; another running.
    "init-files": lambda data: lambda s: wait_for_output(s, "init file pausing"),
}


@pytest.mark.skipif(mysql_image._SKIP is not None, reason=mysql_image._SKIP or "")
@pytest.mark.parametrize("point", sorted(_MYSQL_POINTS))
def test_mysql_killed_during_its_first_start_is_initialised_again(
    point: str, tmp_path: Path, servers: list[Server]
) -> None:
    volume = empty_volume(tmp_path / "volume")
    mnt = _mysql_mnt(tmp_path)
    start = _mysql_starter(tmp_path, volume, mnt, free_port())
    data = volume / "data"
    second = _killed_then_restarted(start, data, _MYSQL_POINTS[point](data), servers,
                                    mnt / "pause")  # fmt: skip
    _mysql_serves(second)
    _restarted_cleanly(second, data)


@pytest.mark.skipif(mysql_image._SKIP is not None, reason=mysql_image._SKIP or "")
def test_mysql_stopped_while_moving_its_files_into_place_finishes_the_move(
    tmp_path: Path, servers: list[Server]
) -> None:
    volume = empty_volume(tmp_path / "volume")
    mnt = _mysql_mnt(tmp_path)
    (mnt / "pause").unlink()
    start = _mysql_starter(tmp_path, volume, mnt, free_port())
    first = start("first.log")
    servers.append(first)
    _mysql_serves(first)
    stop(first)
    data = volume / "data"
    _half_moved_back(data)
    second = start("second.log")
    servers.append(second)
    _mysql_serves(second)
    assert "finishing the move" in second.output(), second.output()
    assert "initialising" not in second.output()
    assert not (data / STAGING).exists()


def _half_moved_back(data: Path) -> None:
    """The state a kill leaves half-way through the move: the mark written, some
    entries (the system schema among them) still in the staging directory."""
    staging = data / STAGING
    staging.mkdir()
    (staging / MARK).touch()
    entries = sorted(data.iterdir())
    moved = [e for e in entries if e.name != STAGING][::2]
    assert moved
    for entry in moved:
        entry.rename(staging / entry.name)
    shutil.chown(staging, 999, 999)


# -- MariaDB -----------------------------------------------------------------------


def _maria_serves(server: Server) -> None:
    maria._wait_ready(server)
    conn = maria._connect(server.port, database="bench_db")
    cur = conn.cursor()
    cur.execute("SELECT CURRENT_USER(), @@gtid_binlog_pos")
    assert cur.fetchone() == ("root@%", "")
    conn.close()
    app = maria._connect(server.port, user="bench", password=maria.ENV["MARIADB_PASSWORD"],
                         database="bench_db")  # fmt: skip
    app.cursor().execute("CREATE TABLE IF NOT EXISTS t (id INT PRIMARY KEY)")
    app.close()


_MARIA_POINTS: dict[str, Callable[[Path], Callable[[Server], None]]] = {
    # mariadb-install-db bootstrapping the system tables.
    "install-db": lambda data: lambda s: wait_for_path(s, data / STAGING / "mysql"),
    # The temporary server up; its accounts SQL about to run.
    "temporary-server": lambda data: lambda s: wait_for_output(s, "ready for connections"),
    # Accounts, database and grants done, the temporary server stopped: the
    # entrypoint holds just before the mark (waiting for the server's "Normal
    # shutdown" raced the one second left until the mark under load).
    "accounts-done": lambda data: lambda s: wait_for_output(s, "pausing before the mark"),
}
# The MariaDB entrypoint has no init files to pause in: its copy under test
# holds once, for the first start only, at the line that writes the mark.
_MARK_LINE = ': >"$staging/$COMPLETE_MARK"\n'
_PAUSE_BEFORE_MARK = (
    'if [[ -e /mnt/pause ]]; then rm -f /mnt/pause; note "pausing before the mark"; sleep 600; fi\n'
)


def _maria_mnt(tmp_path: Path) -> Path:
    """/mnt: the MariaDB entrypoint, pausing once before its completion mark."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    script = (maria.IMAGE.entrypoint_dir / "docker-entrypoint.sh").read_text()
    assert script.count(_MARK_LINE) == 1, "the entrypoint's mark line moved: update _MARK_LINE"
    indent = script[: script.index(_MARK_LINE)].rsplit("\n", 1)[1]
    (mnt / "docker-entrypoint.sh").write_text(
        script.replace(_MARK_LINE, _PAUSE_BEFORE_MARK + indent + _MARK_LINE)
    )
    (mnt / "docker-entrypoint.sh").chmod(0o755)
    (mnt / "pause").touch()
    mnt.chmod(0o777)  # uid 999 removes /mnt/pause
    return mnt


@pytest.mark.skipif(maria._SKIP is not None, reason=maria._SKIP or "")
@pytest.mark.parametrize("point", sorted(_MARIA_POINTS))
def test_mariadb_killed_during_its_first_start_is_initialised_again(
    point: str, tmp_path: Path, servers: list[Server]
) -> None:
    volume = empty_volume(tmp_path / "volume")
    port = free_port()
    mnt = _maria_mnt(tmp_path)
    image = replace(maria.IMAGE, entrypoint_dir=mnt)

    def start(log: str) -> Server:
        return maria._start(volume, port, maria.ENV, tmp_path / log, image)

    data = volume / "data"
    second = _killed_then_restarted(start, data, _MARIA_POINTS[point](data), servers,
                                    mnt / "pause")  # fmt: skip
    _maria_serves(second)
    _restarted_cleanly(second, data)


# -- PostgreSQL --------------------------------------------------------------------


def _pg_starter(
    tmp_path: Path, chart: dict[str, Any], volume: Path, pause: bool = True
) -> Callable[[str], Server]:
    mnt = tmp_path / "mnt"
    (mnt / "initdb").mkdir(parents=True)
    shutil.copy2(REPO / "hack/cluster/postgres/docker-entrypoint.sh", mnt)
    (mnt / "pg_hba.conf").write_text(chart["hba"])
    (mnt / "initdb" / "1-table.sql").write_text("CREATE TABLE seeded (v int);\n")
    (mnt / "initdb" / "2-pause.sh").write_text(PAUSE_SH)
    if pause:
        (mnt / "pause").touch()
    mnt.chmod(0o777)
    image = pg._image(mnt, "/docker-entrypoint-initdb.d")
    env = pg._env(chart["server"], pg.SECRET)
    args = pg._server_args(chart["server"], free_port())
    prelude = "cp /mnt/initdb/* /docker-entrypoint-initdb.d/ && "

    def start(log: str) -> Server:
        return pg._start(image, volume, env, args, tmp_path / log, prelude)

    return start


def _pg_serves(server: Server) -> None:
    """The superuser from the Secret, over TCP, and the run's database with the init
    files' table in it."""
    pg._wait_ready(server)
    with pg._connect(server.port, dbname="dbbench") as conn:
        row = conn.execute("SELECT current_user, count(*) FROM seeded").fetchone()
        assert row == (pg.USER, 0)


_PG_POINTS: dict[str, Callable[[Path], Callable[[Server], None]]] = {
    # initdb creating the cluster.
    "initdb": lambda data: lambda s: wait_for_path(s, data / STAGING / "PG_VERSION"),
    # The database created, an init file running.
    "init-files": lambda data: lambda s: wait_for_output(s, "init file pausing"),
}


@pytest.mark.skipif(pg._SKIP is not None, reason=pg._SKIP or "")
@pytest.mark.parametrize("point", sorted(_PG_POINTS))
def test_postgresql_killed_during_its_first_start_is_initialised_again(
    point: str, chart: dict[str, Any], tmp_path: Path, servers: list[Server]
) -> None:
    volume = empty_volume(tmp_path / "volume")
    data = volume / "pgdata"
    start = _pg_starter(tmp_path, chart, volume)
    second = _killed_then_restarted(start, data, _PG_POINTS[point](data), servers,
                                    tmp_path / "mnt" / "pause")  # fmt: skip
    _pg_serves(second)
    _restarted_cleanly(second, data)


@pytest.mark.skipif(pg._SKIP is not None, reason=pg._SKIP or "")
def test_postgresql_stopped_while_moving_its_files_into_place_finishes_the_move(
    chart: dict[str, Any], tmp_path: Path, servers: list[Server]
) -> None:
    volume = empty_volume(tmp_path / "volume")
    start = _pg_starter(tmp_path, chart, volume, pause=False)
    first = start("first.log")
    servers.append(first)
    _pg_serves(first)
    pg.fast_stop(first)
    data = volume / "pgdata"
    _half_moved_back(data)
    second = start("second.log")
    servers.append(second)
    _pg_serves(second)
    assert "finishing the move" in second.output(), second.output()
    assert not (data / STAGING).exists()


@pytest.mark.skipif(pg._SKIP is not None, reason=pg._SKIP or "")
def test_the_charts_standby_copy_killed_mid_copy_starts_over(
    chart: dict[str, Any], tmp_path: Path, servers: list[Server]
) -> None:
    """charts/postgresql's clone-primary init container, killed while pg_basebackup
    writes $PGDATA.partial, copies again when the pod restarts; the standby starts
    on the complete copy only."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    shutil.copy2(REPO / "hack/cluster/postgres/docker-entrypoint.sh", mnt)
    (mnt / "pg_hba.conf").write_text(chart["hba"])
    env = pg._env(chart["server"], pg.SECRET)
    primary_port = free_port()
    primary = pg._start(pg._image(mnt), empty_volume(tmp_path / "primary"), env,
                        pg._server_args(chart["server"], primary_port),
                        tmp_path / "primary.log")  # fmt: skip
    servers.append(primary)
    pg._wait_ready(primary)
    with pg._connect(primary.port, dbname="dbbench") as conn:  # something to copy
        conn.execute("CREATE TABLE filler AS SELECT g, repeat('x', 500) AS v "
                     "FROM generate_series(1, 200000) g")  # fmt: skip
    script = chart["clone"]["command"][-1].replace("-p 5432", f"-p {primary_port}")
    clone_env = {**pg._env(chart["clone"], pg.SECRET), "HOSTNAME": "db-1",
                 "PRIMARY_HOST": "127.0.0.1"}  # fmt: skip
    volume = empty_volume(tmp_path / "standby")
    partial = volume / "pgdata.partial"
    first = pg._image(mnt).start(volume, 0, clone_env, ["bash", "-ec", script],
                                 tmp_path / "clone-0.log")  # fmt: skip
    servers.append(first)
    wait_for_path(first, partial / "base", timeout=120)
    kill_all(first)
    assert not (volume / "pgdata" / "PG_VERSION").exists()  # nothing half-copied in place
    again = pg._image(mnt).start(volume, 0, clone_env, ["bash", "-ec", script],
                                 tmp_path / "clone-1.log")  # fmt: skip
    assert again.process.wait(timeout=300) == 0, again.output()
    assert (volume / "pgdata" / "standby.signal").exists()
    assert not partial.exists()
    standby = pg._start(pg._image(mnt), volume, env,
                        pg._server_args(chart["server"], free_port()),
                        tmp_path / "standby.log")  # fmt: skip
    servers.append(standby)
    pg._wait_ready(standby)
    with pg._connect(standby.port, dbname="dbbench") as conn:
        assert conn.execute("SELECT count(*) FROM filler").fetchone() == (200000,)
        assert conn.execute("SELECT pg_is_in_recovery()").fetchone() == (True,)
