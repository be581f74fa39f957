"""Thread groups (`mix.by: connections`) as the servers saw them: the statements
of each connection, in the server's own per-connection record.

MariaDB and MySQL 9.7 log every statement with the id of the connection that
sent it (the general log, to the table mysql.general_log); PostgreSQL logs it
with the process id of the backend serving the connection (log_statement =
all, %p in log_line_prefix). Each server is the module's own, started with
that logging. A mix of read 85, insert 15, update 5 over 2 runner pods x 7
threads (14 connections: 11, 2 and 1) runs as a step's pods run it (the
runner's run_step as pod 0 and pod 1 of 2, then the results service's merge
of their files). The servers then say that 11 connections only ever ran the
point SELECT, 2 only INSERTs and 1 only UPDATEs, each exactly its 100
operations; had the runner ignored the groups, every connection would have run
all three (the last test: the same phase by operations, seen the same way on
MariaDB).
"""

from __future__ import annotations

import collections
import contextlib
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from dbbench_contract.summary import StepSummary
from dbbench_local.postgres import find_bin_dir, start_postgres
from dbbench_runner.merge import merge
from dbbench_runner.results import read_summary
from dbbench_runner.running import run_step
from tests.fixtures.mariadb import start_mariadb
from tests.fixtures.mysql import MySQLRoot, start_mysql
from tests.fixtures.postgres import PostgresServer
from tests.integration.runner.sql_contract import SqlServer, fetch_all
from tests.support.runner_files import step

pytestmark = pytest.mark.integration

PODS, THREADS, OPERATIONS, RECORDS = 2, 7, 1400, 2000
MIX = {"read": 85, "insert": 15, "update": 5}
GROUPS = {"read": 11, "insert": 2, "update": 1}
# The workload's statements on flat45 (schema/sql.py), whatever the quoting.
KINDS = {
    "read": re.compile(r"SELECT \* FROM [`\"]flat45[`\"] WHERE"),
    "insert": re.compile(r"INSERT INTO [`\"]flat45[`\"]"),
    "update": re.compile(r"UPDATE [`\"]flat45[`\"] SET"),
}
SMALL = {"recordSize": 128}
# Each connection's share of the operations (keyspace.split: 1400 over 14).
EACH = OPERATIONS // (PODS * THREADS)
PG_LOGGED = re.compile(r"^(\d+)\|LOG:  (?:statement|execute [^:]+): (.*)$")


@dataclass
class Logged:
    """A server that records each statement with its connection."""

    target: Callable[[str], dict[str, Any]]
    # Turns the record on for the block; then the (connection, statement) pairs.
    recording: Callable[[], contextlib.AbstractContextManager[list[tuple[str, str]]]]


def mysql_family(engine: str, server: SqlServer) -> Logged:
    def sql(statement: str) -> list[Any]:
        return fetch_all(server, statement)

    @contextlib.contextmanager
    def recording() -> Iterator[list[tuple[str, str]]]:
        seen: list[tuple[str, str]] = []
        sql("TRUNCATE TABLE mysql.general_log")
        sql("SET GLOBAL general_log = ON")
        try:
            yield seen
        finally:
            sql("SET GLOBAL general_log = OFF")
        rows = sql("SELECT thread_id, argument FROM mysql.general_log "
                   "WHERE command_type IN ('Query', 'Execute')")  # fmt: skip
        seen += [(str(t), a if isinstance(a, str) else bytes(a).decode()) for t, a in rows]

    args = server.connect_args()
    return Logged(lambda database: {"name": engine, "engine": engine, **args,
                                    "database": database}, recording)  # fmt: skip


def postgresql(server: PostgresServer) -> Logged:
    @contextlib.contextmanager
    def recording() -> Iterator[list[tuple[str, str]]]:
        seen: list[tuple[str, str]] = []
        start = server.log.stat().st_size
        yield seen
        with server.log.open("rb") as log:
            log.seek(start)
            lines = log.read().decode(errors="replace").splitlines()
        seen += [(m[1], m[2]) for m in map(PG_LOGGED.match, lines) if m]

    def target(database: str) -> dict[str, Any]:
        return {"name": "postgresql", "engine": "postgresql", "host": "127.0.0.1",
                "port": server.port, "user": server.user, "password": server.password,
                "database": database}  # fmt: skip

    return Logged(target, recording)


@pytest.fixture(scope="module", params=["mariadb", "mysql", "postgresql"])
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Logged]:
    engine = request.param
    if engine == "mariadb":
        maria = start_mariadb(tmp_path_factory.mktemp("groups"), extra_args=["--log-output=TABLE"])
        try:
            yield mysql_family(engine, maria)
        finally:
            maria.stop()
    elif engine == "mysql":
        root: MySQLRoot = request.getfixturevalue("mysql_root")
        template = request.getfixturevalue("mysql_template")
        my = start_mysql(root, template=template, extra_args=["--log-output=TABLE"])
        try:
            yield mysql_family(engine, my)
        finally:
            my.stop()
    else:
        if find_bin_dir() is None:
            pytest.fail("no PostgreSQL server binaries: run `make tools`")
        pg = start_postgres(["-c", "log_statement=all", "-c", "log_line_prefix=%p|"])
        try:
            yield postgresql(pg)
        finally:
            pg.stop()


def load(server: Logged, database: str, out: Path) -> None:
    phase = {"type": "insert", "batchSize": 100, "reportEvery": RECORDS}
    config = step(server.target(database), "flat45", RECORDS, phase, table=SMALL)
    assert run_step(config, out) == 0


def run_pods(server: Logged, database: str, mix: dict[str, Any], out: Path) -> StepSummary:
    """The mix as pod 0 and pod 1 of 2 run it; the merged summary."""
    phase = {"type": "mix", "mix": mix, "operations": OPERATIONS}
    for pod in range(PODS):
        config = step(server.target(database), "flat45", RECORDS, phase, table=SMALL,
                      threads=THREADS, pod={"index": pod, "count": PODS})  # fmt: skip
        assert run_step(config, out / f"pod-{pod}") == 0
    return merge(out / "merged", [out / f"pod-{pod}" for pod in range(PODS)])


def by_connection(seen: list[tuple[str, str]]) -> dict[str, collections.Counter[str]]:
    """The workload statements each connection sent, counted by operation type."""
    found: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for connection, statement in seen:
        for kind, pattern in KINDS.items():
            if pattern.match(statement):
                found[connection][kind] += 1
    return dict(found)


@pytest.fixture
def database() -> str:
    return f"g_{uuid.uuid4().hex[:12]}"


def test_each_connection_ran_only_its_groups_statements(
    server: Logged, database: str, tmp_path: Path
) -> None:
    load(server, database, tmp_path / "load")
    with server.recording() as seen:
        merged = run_pods(server, database, {**MIX, "by": "connections"}, tmp_path)
    connections = by_connection(seen)
    assert len(connections) == PODS * THREADS, connections
    assert all(len(kinds) == 1 for kinds in connections.values()), connections
    assert all(sum(kinds.values()) == EACH for kinds in connections.values()), connections
    groups = collections.Counter(next(iter(kinds)) for kinds in connections.values())
    assert dict(groups) == GROUPS, connections
    # The runner's own account of it, per pod (the run's groups) and merged.
    assert merged.connection_groups == GROUPS
    for pod in range(PODS):
        assert read_summary(tmp_path / f"pod-{pod}").connection_groups == GROUPS
    by_type = {k: v.operations for k, v in merged.operations_by_type.items()}
    assert by_type == {kind: n * EACH for kind, n in GROUPS.items()}


@pytest.mark.parametrize("server", ["mariadb"], indirect=True)
def test_weights_per_operation_put_every_type_on_every_connection(
    server: Logged, database: str, tmp_path: Path
) -> None:
    """What the test above sees when every connection draws every type: what it
    would see if the runner ignored the groups (a connection that drew 100 reads
    in a row at 85:15:5 happens about once in 10**9)."""
    load(server, database, tmp_path / "load")
    with server.recording() as seen:
        merged = run_pods(server, database, MIX, tmp_path)
    connections = by_connection(seen)
    assert len(connections) == PODS * THREADS, connections
    assert all(len(kinds) > 1 for kinds in connections.values()), connections
    assert merged.connection_groups == {}
