"""How much memory each node image's server holds: the figures behind the memory floors.

    python -m tests.integration.images.measure_memory [engine ...]   # as root, images' roots built

Each server runs as the chart runs it (the images' entrypoints chrooted in
their roots as uid 999, tests/integration/images/image_support.py) inside a memory
cgroup of its own, with a limit far above what it uses. Measured: what the
cgroup charges that cannot be dropped (cgroup v1 memory.stat `rss` +
`mapped_file`: anonymous memory, shared buffers and the server's mapped code;
v2 `anon` + `file_mapped`) once the server answers, and again with
`CONNECTIONS` connections open, each having run a point read and a sorted
scan of a 20,000-row table. model/memory_floors.py records the results
(docs/decisions.md, "Memory floors").
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pymongo

from dbbench_local.mariadb import free_port
from tests.integration.images import test_ferretdb_image as ferret
from tests.integration.images import test_mariadb_image as maria
from tests.integration.images import test_mysql_image as mysql_image
from tests.integration.images import test_postgres_image as pg
from tests.integration.images.image_support import (
    REPO,
    MemoryCgroup,
    Server,
    empty_volume,
    memory_cgroup,
    stop,
)

MIB = 1024**2
CONNECTIONS = 100
ROWS = 20_000


def resident(server: Server) -> int:
    """VmRSS of the server process (the entrypoint exec()s it: the launcher's PID)."""
    status = Path(f"/proc/{server.process.pid}/status").read_text()
    kb = next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:"))
    return int(kb) * 1024


def charged(cgroup: MemoryCgroup) -> int:
    stat = dict(line.split() for line in (cgroup.path / "memory.stat").read_text().splitlines())
    if "mapped_file" in stat:  # v1
        return int(stat["rss"]) + int(stat["mapped_file"])
    return int(stat["anon"]) + int(stat["file_mapped"])


@contextmanager
def _running(start: Callable[[Path, MemoryCgroup | None], Server],
             ready: Callable[[Server], None], cgroup_root: bool,
             ) -> Iterator[tuple[Server, MemoryCgroup | None]]:  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp, memory_cgroup(8 * 1024 * MIB) as made:
        cgroup = made if cgroup_root else None
        server = start(empty_volume(Path(tmp) / "volume"), cgroup)
        try:
            ready(server)
            time.sleep(3)  # background threads settle
            yield server, cgroup
        finally:
            stop(server)


def _sql_load(connect: Callable[[], Any], setup_sql: list[str], sort: str) -> list[Any]:
    setup = connect()
    cur = setup.cursor()
    for statement in setup_sql:
        cur.execute(statement)
    setup.commit()
    opened = []
    for _ in range(CONNECTIONS):
        conn = connect()
        cur = conn.cursor()
        cur.execute("SELECT v FROM t WHERE id = 42")
        cur.fetchall()
        cur.execute(sort)
        cur.fetchall()
        opened.append(conn)
    return [setup, *opened]


def _measure(name: str, settings: str, start: Callable[[Path, MemoryCgroup | None], Server],
             ready: Callable[[Server], None], load: Callable[[Server], list[Any]],
             cgroup_root: bool = True) -> None:  # fmt: skip
    """`cgroup_root`: the image's root can join a cgroup (has /sys); else VmRSS."""
    with _running(start, ready, cgroup_root) as (server, cgroup):
        base = charged(cgroup) if cgroup else resident(server)
        opened = load(server)
        time.sleep(2)
        loaded = charged(cgroup) if cgroup else resident(server)
        for conn in opened:
            conn.close()
    per = (loaded - base) / CONNECTIONS
    print(f"{name:10} {settings:45} base {base / MIB:7.1f} MiB   "
          f"+{CONNECTIONS} connections {loaded / MIB:7.1f} MiB   "
          f"per connection {per / MIB:5.2f} MiB", flush=True)  # fmt: skip


def mysql_case(pool: str, performance_schema: str) -> None:
    def start(volume: Path, cgroup: MemoryCgroup | None) -> Server:
        port = free_port()
        command = [
            "bash", "-ec", 'exec /mnt/docker-entrypoint.sh "$@" --server-id=1', "entrypoint",
            "mysqld", "--datadir=/var/lib/mysql/data", "--skip-name-resolve", "--log-bin=binlog",
            "--gtid-mode=ON", "--enforce-gtid-consistency=ON", f"--innodb_buffer_pool_size={pool}",
            f"--performance_schema={performance_schema}", f"--port={port}",
            "--bind-address=127.0.0.1", "--mysqlx=OFF", "--max_connections=200",
        ]  # fmt: skip
        return mysql_image.IMAGE.start(volume, port, mysql_image.ENV, command,
                                       volume.parent / "server.log", cgroup)  # fmt: skip

    def load(server: Server) -> list[Any]:
        return _sql_load(
            lambda: mysql_image._connect(server.port, database="bench_db"),
            [
                "SET SESSION cte_max_recursion_depth = 1000000",
                "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(200))",
                f"INSERT INTO t WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s "
                f"WHERE n < {ROWS}) SELECT n, REPEAT(LPAD(n, 10, 'x'), 18) FROM s",
            ],
            "SELECT v FROM t ORDER BY v DESC LIMIT 5",
        )

    settings = f"pool {pool}, performance_schema {performance_schema}"
    _measure("mysql", settings, start, mysql_image._wait_ready, load)


def mariadb_case(pool: str, performance_schema: str = "OFF") -> None:
    def start(volume: Path, cgroup: MemoryCgroup | None) -> Server:
        port = free_port()
        command = [
            "bash", "-ec", 'exec /mnt/docker-entrypoint.sh "$@" --server-id=1', "entrypoint",
            "mariadbd", "--datadir=/var/lib/mysql/data", "--skip-name-resolve",
            "--log-bin=mysql-bin", "--binlog-format=ROW", f"--innodb-buffer-pool-size={pool}",
            f"--performance_schema={performance_schema}",
            f"--port={port}", "--bind-address=127.0.0.1", "--max_connections=200",
        ]  # fmt: skip
        return maria.IMAGE.start(volume, port, maria.ENV, command, volume.parent / "server.log",
                                 cgroup)  # fmt: skip

    def load(server: Server) -> list[Any]:
        return _sql_load(
            lambda: maria._connect(server.port, database="bench_db"),
            [
                "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(200))",
                f"INSERT INTO t SELECT seq, REPEAT(MD5(seq), 6) FROM seq_1_to_{ROWS}",
            ],
            "SELECT v FROM t ORDER BY v DESC LIMIT 5",
        )

    settings = f"pool {pool}, performance_schema {performance_schema}"
    _measure("mariadb", settings, start, maria._wait_ready, load)


def postgres_case(shared_buffers: str) -> None:
    chart = pg.chart_parts()
    mnt = Path(tempfile.mkdtemp())
    (mnt / "initdb").mkdir()
    (mnt / "docker-entrypoint.sh").write_bytes(
        (REPO / "hack/cluster/postgres/docker-entrypoint.sh").read_bytes())  # fmt: skip
    (mnt / "docker-entrypoint.sh").chmod(0o755)
    (mnt / "pg_hba.conf").write_text(chart["hba"])
    mnt.chmod(0o755)

    def start(volume: Path, cgroup: MemoryCgroup | None) -> Server:
        args = pg._server_args(chart["server"], free_port())
        args = [a.replace("shared_buffers=32MB", f"shared_buffers={shared_buffers}") for a in args]
        args += ["-c", "max_connections=200"]
        port = int(next(a.split("=")[1] for a in args if a.startswith("port=")))
        command = ["bash", "-ec", 'exec /mnt/docker-entrypoint.sh "$@"', "entrypoint", *args]
        return pg._image(mnt).start(volume, port, pg._env(chart["server"], pg.SECRET), command,
                                    volume.parent / "server.log", cgroup)  # fmt: skip

    def load(server: Server) -> list[Any]:
        return _sql_load(
            lambda: psycopg.connect(
                host="127.0.0.1",
                port=server.port,
                user=pg.USER,
                password=pg.PASSWORD,
                dbname="dbbench",
            ),
            [
                "CREATE TABLE t (id int PRIMARY KEY, v text)",
                "INSERT INTO t SELECT n, repeat(md5(n::text), 6) "
                f"FROM generate_series(1, {ROWS}) n",
            ],
            "SELECT v FROM t ORDER BY v DESC LIMIT 5",
        )

    _measure("postgresql", f"shared_buffers {shared_buffers}", start, pg._wait_ready, load)


def ferretdb_case() -> None:
    def start(volume: Path, cgroup: MemoryCgroup | None) -> Server:
        port = free_port()
        command = ["/mnt/docker-entrypoint.sh", "mongod", "--bind_ip=127.0.0.1",
                   f"--port={port}", "--dbpath=/data/db"]  # fmt: skip
        return ferret.IMAGE.start(volume, port, ferret.ROOT_ENV, command,
                                  volume.parent / "server.log", cgroup)  # fmt: skip

    def load(server: Server) -> list[Any]:
        first = ferret._client(server, **ferret.AUTH)
        first.dbbench.t.insert_many([{"_id": i, "v": str(i) * 40} for i in range(ROWS)])
        opened = [first]
        for _ in range(CONNECTIONS):
            client = ferret._client(server, maxPoolSize=1, **ferret.AUTH)
            client.dbbench.t.find_one({"_id": 42})
            list(client.dbbench.t.find().sort("v", pymongo.DESCENDING).limit(5))
            opened.append(client)
        return opened

    # Its busybox root has no /sys to show a cgroup in: VmRSS (one Go process).
    _measure("ferretdb", "(SQLite)", start, ferret._wait_listening, load, cgroup_root=False)


CASES: dict[str, list[Callable[[], None]]] = {
    "mysql": [
        lambda: mysql_case("32M", "ON"),
        lambda: mysql_case("128M", "ON"),
        lambda: mysql_case("32M", "OFF"),
    ],
    "mariadb": [
        lambda: mariadb_case("32M"),
        lambda: mariadb_case("128M"),
        lambda: mariadb_case("32M", "ON"),
    ],
    "postgresql": [lambda: postgres_case("32MB"), lambda: postgres_case("128MB")],
    "ferretdb": [ferretdb_case],
}


def main(argv: list[str]) -> None:
    for engine in argv or list(CASES):
        for case in CASES[engine]:
            case()


if __name__ == "__main__":
    main(sys.argv[1:])
