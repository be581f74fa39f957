"""PostgreSQL streaming replication for real: a primary and two standbys (pg_basebackup
copies, as the chart's init container makes them) and the operator's setup
(postgres_replication.ensure_streaming) run against them.

Checked at the servers: a row written on the primary is read on both standbys,
pg_stat_replication lists both standbys streaming (and, for strict, as
synchronous candidates with a commit that really waits for one), a second pass
executes nothing, drift is repaired, the runner's replica reads land on the
standbys (their own pg_stat_database counts them), and the external-target
probe tells a primary, a standby and a standalone server apart.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest

from dbbench_operator.targets.external import probe
from dbbench_operator.targets.sql.mysql_replication import (
    Member,
    ReplicationCredentials,
    ReplicationReadiness,
)
from dbbench_operator.targets.sql.pg_session import PsycopgSession, connect
from dbbench_operator.targets.sql.postgres_replication import ensure_streaming
from dbbench_runner.running import run_step
from tests.fixtures.postgres import PostgresServer
from tests.support.runner_files import check_results, step

pytestmark = pytest.mark.integration

CREDS = ReplicationCredentials(user="dbbench_repl", password="s3cret-repl.pw")
NAMES = ("pg-0", "pg-1", "pg-2")


@dataclass
class RecordingSession:
    """A real connection that remembers every statement sent through it."""

    inner: PsycopgSession
    executed: list[str] = field(default_factory=list)

    def execute(self, sql: str) -> None:
        self.executed.append(sql)
        self.inner.execute(sql)

    def query(self, sql: str) -> list[dict[str, Any]]:
        return self.inner.query(sql)


@dataclass
class Group:
    servers: list[PostgresServer]
    sessions: list[RecordingSession]

    def members(self) -> tuple[Member, list[Member]]:
        found = [
            Member(name, "127.0.0.1", server.port, session)
            for name, server, session in zip(NAMES, self.servers, self.sessions, strict=True)
        ]
        return found[0], found[1:]

    def one_pass(self, *, synchronous: bool = False) -> ReplicationReadiness:
        primary, standbys = self.members()
        return ensure_streaming(primary, standbys, CREDS, synchronous=synchronous)

    def until_ready(
        self, *, synchronous: bool = False, timeout: float = 60
    ) -> ReplicationReadiness:
        """Passes as the operator repeats them (every few seconds), until ready."""
        deadline = time.monotonic() + timeout
        while True:
            result = self.one_pass(synchronous=synchronous)
            if result.ready or result.failure or time.monotonic() > deadline:
                return result
            time.sleep(0.3)

    def executed(self) -> list[str]:
        return [sql for session in self.sessions for sql in session.executed]

    def forget(self) -> None:
        for session in self.sessions:
            session.executed.clear()


@pytest.fixture
def group(postgres_factory: Callable[..., list[PostgresServer]]) -> Iterator[Group]:
    servers = postgres_factory(standbys=2)
    sessions = [RecordingSession(connect("127.0.0.1", s.port, s.user, s.password)) for s in servers]
    yield Group(servers, sessions)
    for session in sessions:
        session.inner.close()


def replication(group: Group) -> dict[str, dict[str, Any]]:
    rows = group.sessions[0].query(
        "SELECT application_name, state, sync_state FROM pg_stat_replication"
    )
    return {row["application_name"]: row for row in rows}


def write_and_read(group: Group, value: str, timeout: float = 30) -> list[Any]:
    """A row written on the primary, read back on every standby (or what they answer)."""
    primary = group.sessions[0].inner
    primary.execute("CREATE TABLE IF NOT EXISTS t (id INT PRIMARY KEY, v TEXT)")
    primary.execute(
        f"INSERT INTO t VALUES (1, '{value}') ON CONFLICT (id) DO UPDATE SET v = '{value}'"
    )
    deadline = time.monotonic() + timeout
    while True:
        rows = [_read(s.inner) for s in group.sessions[1:]]
        if all(r == [{"v": value}] for r in rows) or time.monotonic() > deadline:
            return rows
        time.sleep(0.1)


def _read(session: PsycopgSession) -> list[dict[str, Any]] | str:
    try:
        return session.query("SELECT v FROM t WHERE id = 1")
    except psycopg.Error as exc:  # the table may not have arrived yet
        return str(exc)


def test_standbys_stream_and_a_row_reaches_both(group: Group) -> None:
    first = group.one_pass()
    assert not first.ready  # copies in recovery that stream from nowhere yet
    result = group.until_ready()
    assert result.ready, result.message
    assert result.message == "2/2 standbys streaming, asynchronous"
    assert write_and_read(group, "hello") == [[{"v": "hello"}], [{"v": "hello"}]]
    assert {n: (r["state"], r["sync_state"]) for n, r in replication(group).items()} == {
        "pg-1": ("streaming", "async"),
        "pg-2": ("streaming", "async"),
    }
    # Role, slots, conninfo and slot name on each standby, an empty standby list.
    executed = group.executed()
    assert "CREATE ROLE dbbench_repl WITH LOGIN REPLICATION PASSWORD 's3cret-repl.pw'" in executed
    assert "SELECT pg_create_physical_replication_slot('dbbench_pg_1', true)" in executed
    assert group.sessions[1].executed[0] == (
        "ALTER SYSTEM SET primary_conninfo = 'host=127.0.0.1 "
        f"port={group.servers[0].port} user=dbbench_repl password=s3cret-repl.pw "
        "application_name=pg-1'"
    )
    slots = group.sessions[0].query("SELECT slot_name, active FROM pg_replication_slots")
    assert sorted((s["slot_name"], s["active"]) for s in slots) == [
        ("dbbench_pg_1", True), ("dbbench_pg_2", True),
    ]  # fmt: skip


def test_a_second_pass_executes_nothing(group: Group) -> None:
    assert group.until_ready().ready
    group.forget()
    again = group.one_pass()
    assert again.ready, again.message
    assert group.executed() == []


def test_a_pass_that_changes_synchronous_standby_names_is_not_ready_until_in_effect(
    group: Group,
) -> None:
    """pg_reload_conf() only signals the server: the pass that sets the value waits
    for a later pass to read it in effect. (Before: the same pass said Ready, and a
    full `make test` once read the old value right after it.)"""
    assert group.until_ready().ready
    group.forget()
    changing = group.one_pass(synchronous=True)
    assert not changing.ready
    assert changing.reason == "WaitingForSettings", changing
    assert "synchronous_standby_names set to 'ANY 1" in changing.message
    assert any("ALTER SYSTEM SET synchronous_standby_names" in s for s in group.executed())
    result = group.until_ready(synchronous=True)
    assert result.ready, result.message
    names = group.sessions[0].query("SHOW synchronous_standby_names")
    assert names == [{"synchronous_standby_names": 'ANY 1 ("pg-1", "pg-2")'}]


def test_strict_has_a_synchronous_standby_and_commits_wait_for_one(group: Group) -> None:
    result = group.until_ready(synchronous=True)
    assert result.ready, result.message
    assert result.message == "2/2 standbys streaming, synchronous (quorum of 1)"
    names = group.sessions[0].query("SHOW synchronous_standby_names")
    assert names == [{"synchronous_standby_names": 'ANY 1 ("pg-1", "pg-2")'}]
    assert {r["sync_state"] for r in replication(group).values()} == {"quorum"}
    group.forget()
    assert group.one_pass(synchronous=True).ready
    assert group.executed() == []
    group.sessions[0].inner.execute("CREATE TABLE w (id INT)")
    # With no standby streaming, a commit waits (here until it is cancelled:
    # statement_timeout is off during commit; the row is then committed
    # locally, with a warning).
    for session in group.sessions[1:]:
        session.inner.execute("ALTER SYSTEM SET primary_conninfo = ''")
        session.inner.execute("SELECT pg_reload_conf()")
    _until(lambda: not replication(group), "both standbys disconnected")
    notices: list[str] = []
    with psycopg.connect(**group.servers[0].connect_args(), autocommit=True) as conn:  # type: ignore[arg-type]
        conn.add_notice_handler(lambda d: notices.append(str(d.message_primary)))
        cancel = threading.Timer(1.5, conn.cancel_safe)
        started = time.monotonic()
        cancel.start()
        try:
            conn.execute("INSERT INTO w VALUES (1)")
        finally:
            cancel.cancel()
        waited = time.monotonic() - started
    assert waited >= 1.4
    assert any("canceling wait for synchronous replication" in n for n in notices), notices
    # The setup repairs both standbys; commits are acknowledged again.
    assert group.until_ready(synchronous=True).ready
    assert write_and_read(group, "after") == [[{"v": "after"}], [{"v": "after"}]]
    # Back to safe: asynchronous again.
    assert group.until_ready(synchronous=False).ready
    assert group.sessions[0].query("SHOW synchronous_standby_names") == [
        {"synchronous_standby_names": ""}
    ]


def test_drift_is_repaired(group: Group) -> None:
    assert group.until_ready().ready
    standby = group.sessions[1].inner
    standby.execute(
        "ALTER SYSTEM SET primary_conninfo = 'host=127.0.0.1 port=1 user=dbbench_repl "
        "application_name=pg-1'"
    )
    standby.execute("SELECT pg_reload_conf()")
    group.sessions[0].inner.execute("ALTER ROLE dbbench_repl NOREPLICATION")
    _until(lambda: "pg-1" not in replication(group), "pg-1 disconnected")
    group.forget()
    result = group.until_ready()
    assert result.ready, result.message
    executed = group.executed()
    assert "ALTER ROLE dbbench_repl WITH LOGIN REPLICATION" in executed
    assert any(
        s.startswith("ALTER SYSTEM SET primary_conninfo") for s in group.sessions[1].executed
    )
    assert group.sessions[2].executed == []  # the healthy standby is left alone
    assert write_and_read(group, "repaired") == [[{"v": "repaired"}], [{"v": "repaired"}]]


def test_runner_reads_land_on_the_standbys(group: Group, tmp_path: Path) -> None:
    assert group.until_ready().ready
    primary, standbys = group.servers[0], group.servers[1:]
    database = f"r_{uuid.uuid4().hex[:12]}"
    target = {
        "name": "pg", "engine": "postgresql", "host": "127.0.0.1", "port": primary.port,
        "user": primary.user, "password": primary.password, "database": database,
        "replicas": [{"host": "127.0.0.1", "port": s.port} for s in standbys],
    }  # fmt: skip
    assert run_step(step(target, "ycsb", 200, {"type": "insert", "batchSize": 20}),
                    tmp_path / "load") == 0  # fmt: skip
    lsn = group.sessions[0].query("SELECT pg_current_wal_lsn()::text AS l")[0]["l"]
    _until(lambda: all(_replayed(s.inner, lsn) for s in group.sessions[1:]), "standbys caught up")
    before = [_fetched(s, database) for s in standbys]
    phase = {"type": "pointReads", "keys": 200, "operations": 200,
             "readPreference": "secondaryPreferred"}  # fmt: skip
    assert run_step(step(target, "ycsb", 200, phase), tmp_path / "reads") == 0
    summary = check_results(tmp_path / "reads", operations=200)
    assert summary["operationsByType"]["read"]["rows"] == 200  # every key found on a standby
    # Each standby's own statistics: one connection each (worker w reads replica w mod 2).
    gained = [_fetched(s, database) - b for s, b in zip(standbys, before, strict=True)]
    assert all(g >= 100 for g in gained), gained


def test_probe_tells_primary_standby_and_standalone(
    group: Group, postgres_server: PostgresServer
) -> None:
    assert group.until_ready().ready

    def uri(server: PostgresServer) -> str:
        return f"postgresql://{server.user}:{server.password}@127.0.0.1:{server.port}/postgres"

    found = [probe(uri(s)) for s in (*group.servers[:2], postgres_server)]
    assert [(p.engine, p.topology) for p in found] == [
        ("postgresql", "primaryReplica"), ("postgresql", "replica"), ("postgresql", "standalone"),
    ]  # fmt: skip
    assert found[0].server_version.split(".")[0].isdigit()
    assert found[0].endpoint == f"127.0.0.1:{group.servers[0].port}"


def _fetched(server: PostgresServer, database: str) -> int:
    """Rows the server returned to queries on `database` (its own pg_stat_database)."""
    with server.connect() as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(
            "SELECT tup_returned + tup_fetched FROM pg_stat_database WHERE datname = %s", [database]
        ).fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def _replayed(session: PsycopgSession, lsn: str) -> bool:
    rows = session.query(f"SELECT pg_last_wal_replay_lsn() >= '{lsn}'::pg_lsn AS done")
    return bool(rows[0]["done"])


def _until(check: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting: {what}")
        time.sleep(0.2)
