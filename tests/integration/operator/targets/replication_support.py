"""What the MariaDB and MySQL replication tests share: a recording session,
members on loopback, and polling until replication is ready or a row arrives."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import mysql.connector

from dbbench_operator.targets.sql.mysql_replication import (
    Member,
    ReplicationCredentials,
    ReplicationReadiness,
    ensure_replication,
)
from dbbench_operator.targets.sql.mysql_statements import dialect
from dbbench_operator.targets.sql.session import ConnectorSession

CREDS = ReplicationCredentials(user="dbbench_repl", password="s3cret-repl.pw")


class Server(Protocol):
    @property
    def port(self) -> int: ...


@dataclass
class RecordingSession:
    """A real connection that remembers every statement sent through it."""

    inner: ConnectorSession
    executed: list[str] = field(default_factory=list)
    queried: list[str] = field(default_factory=list)

    def execute(self, sql: str) -> None:
        self.executed.append(sql)
        self.inner.execute(sql)

    def query(self, sql: str) -> list[dict[str, Any]]:
        self.queried.append(sql)
        return self.inner.query(sql)


def members(
    servers: Sequence[Server], sessions: Sequence[RecordingSession]
) -> tuple[Member, list[Member]]:
    """The first server is the primary, the others its replicas (pods db-0, db-1, ...)."""
    found = [
        Member(f"db-{i}", "127.0.0.1", s.port, sess)
        for i, (s, sess) in enumerate(zip(servers, sessions, strict=True))
    ]
    return found[0], found[1:]


def until_ready(
    servers: Sequence[Server],
    sessions: Sequence[RecordingSession],
    engine: Literal["mariadb", "mysql"],
    *,
    semi_sync: bool = False,
    timeout: float = 30,
    stop_on_failure: bool = True,
) -> ReplicationReadiness:
    """ensure_replication repeated as the operator does, until ready (or failed)."""
    primary, replicas = members(servers, sessions)
    deadline = time.monotonic() + timeout
    while True:
        result = ensure_replication(primary, replicas, CREDS, engine, semi_sync=semi_sync)
        failed = stop_on_failure and bool(result.failure)
        if result.ready or failed or time.monotonic() > deadline:
            return result
        time.sleep(0.3)


def break_replica(
    session: RecordingSession,
    statements: Sequence[str],
    engine: Literal["mariadb", "mysql"],
    timeout: float = 60,
) -> None:
    """Break a replica with `statements`; when they end by restarting its threads,
    wait until the IO thread has failed.

    Right after START the IO thread is `Connecting` with no error yet, and a pass
    rightly leaves such a replica alone (mysql_replication._io_connecting). Under
    load its first attempt can take seconds (seen once in make test), and the
    tests mean a replica that has failed, not one on its way.
    """
    for statement in statements:
        session.inner.execute(statement)
    if not statements[-1].startswith("START"):
        return
    status_query = dialect(engine).replica_status
    deadline = time.monotonic() + timeout
    while True:
        rows = session.inner.query(status_query)
        errno = int(rows[0].get("Last_IO_Errno") or 0) if rows else 0
        if errno not in (0, -1):
            return
        assert time.monotonic() < deadline, f"the IO thread did not fail in {timeout} s: {rows}"
        time.sleep(0.2)


def write_and_read(
    sessions: Sequence[RecordingSession], value: str, timeout: float = 30
) -> list[Any]:
    """A row written on the primary, read back on every replica (or what they answer)."""
    primary = sessions[0].inner
    primary.execute("CREATE DATABASE IF NOT EXISTS bench")
    primary.execute("CREATE TABLE IF NOT EXISTS bench.t (id INT PRIMARY KEY, v VARCHAR(32))")
    primary.execute(f"REPLACE INTO bench.t VALUES (1, '{value}')")
    deadline = time.monotonic() + timeout
    while True:
        rows = [read_row(s) for s in sessions[1:]]
        if all(r == [{"v": value}] for r in rows) or time.monotonic() > deadline:
            return rows
        time.sleep(0.2)


def read_row(session: RecordingSession) -> list[dict[str, Any]] | str:
    try:
        return session.inner.query("SELECT v FROM bench.t WHERE id = 1")
    except mysql.connector.Error as exc:  # the table may not have arrived yet
        return str(exc)
