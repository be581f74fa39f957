"""What the MySQL and PostgreSQL drivers share: replica routing, the operations
as statements, and recovery after an error.

A worker holds a connection to the primary and, when the phase reads from
replicas (`readPreference` other than `primary`) and the target lists some,
one to the replica its worker index picks (round robin); operations that may
read a secondary (`secondary_ok`) go there. An error fails its operation only:
what it left open is rolled back, and a lost connection is opened again once
(the next operation uses the new one). Each engine says how in a few hooks:
its per-connection handle (a cursor, a prepared session), how a read and a
write run, how a transaction begins and commits, whether an error lost the
connection, and how to open one again.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from typing import Any, Generic, Protocol, TypeVar

from dbbench_contract.step import Endpoint
from dbbench_runner.config import StepConfig
from dbbench_runner.datasets import DatasetGenerator
from dbbench_runner.operations import (
    Insert,
    Operation,
    Query,
    Read,
    ReadModifyWrite,
    Scan,
    Status,
    Update,
)
from dbbench_runner.schema import sql
from dbbench_runner.schema.sql import Dialect

log = logging.getLogger(__name__)


class Closable(Protocol):
    def close(self) -> None: ...


Handle = TypeVar("Handle", bound=Closable)


def replica_for(config: StepConfig, worker: int) -> Endpoint | None:
    """The replica this worker reads from, when the phase reads from replicas."""
    replicas = config.target.replicas
    if config.phase.read_preference == "primary" or not replicas:
        return None
    return replicas[worker % len(replicas)]


class SqlDriver(ABC, Generic[Handle]):
    """One worker's connections (role -> (connection, how to open it again))."""

    def __init__(
        self,
        config: StepConfig,
        dataset: DatasetGenerator,
        dialect: Dialect,
        connections: dict[str, tuple[Any, Any]],
        errors: tuple[type[BaseException], ...],
    ) -> None:
        self._config = config
        self._dataset = dataset
        self._dialect = dialect
        self._connections = connections
        self._primary: Any = connections["primary"][0]
        self._replica: Any | None = connections["replica"][0] if "replica" in connections else None
        self._errors = errors  # the client library's errors: an operation's failure
        self._handles: dict[int, Handle] = {}
        self._has_children = sql.has_child_table(dataset)
        # vehicle's read joins one row per item; such a read counts the one object it rebuilds.
        self._joined_reads = sql.read_is_joined(dataset)
        # Statement texts depend only on (kind, size): build each once.
        self._statements: dict[tuple[str, int], str] = {}

    # The engine's hooks.
    @abstractmethod
    def _open_handle(self, conn: Any) -> Handle:
        """What the hot path runs statements through on `conn`."""

    @abstractmethod
    def _fetch(self, conn: Any, statement: str, params: list[object]) -> int:
        """Run a SELECT, load every row; the row count."""

    @abstractmethod
    def _write(self, conn: Any, statement: str, params: list[object]) -> int:
        """Run an INSERT or UPDATE; the rows it touched."""

    @abstractmethod
    def _begin(self, conn: Any) -> None: ...

    @abstractmethod
    def _commit(self, conn: Any) -> None: ...

    @abstractmethod
    def _after_error(self, conn: Any, exc: BaseException) -> bool:
        """Roll back a transaction the error left open (a failed rollback is only
        logged); False when the error lost the connection (it is opened again)."""

    @abstractmethod
    def _reopen(self, args: Any) -> Any:
        """A new connection from the arguments the lost one was opened with."""

    @abstractmethod
    def _code(self, exc: BaseException) -> object:
        """The server's error code, for the failed operation's error text."""

    # Shared.
    def _handle(self, conn: Any) -> Handle:
        handle = self._handles.get(id(conn))
        if handle is None:
            handle = self._handles[id(conn)] = self._open_handle(conn)
        return handle

    def _statement(self, kind: str, size: int = 0) -> str:
        key = (kind, size)
        statement = self._statements.get(key)
        if statement is None:
            statement = self._statements[key] = self._dialect.statement(self._dataset, kind, size)
        return statement

    def execute(self, operation: Operation) -> Status:
        conn = self._primary
        if self._replica is not None and getattr(operation, "secondary_ok", False):
            conn = self._replica
        try:
            return self._execute(conn, operation)
        except self._errors as exc:
            self._recover(conn, exc)
            return Status.failed(f"{type(exc).__name__}({self._code(exc)})")

    def _recover(self, conn: Any, exc: BaseException) -> None:
        """Roll back what an error left open; reopen a lost connection once."""
        if self._after_error(conn, exc):
            return
        self._handles.pop(id(conn), None)
        for role, (known, args) in self._connections.items():
            if known is not conn:
                continue
            try:
                fresh = self._reopen(args)
            except self._errors as again:
                log.warning("reconnecting after %s failed: %s", exc, again)
                return
            self._connections[role] = (fresh, args)
            if role == "primary":
                self._primary = fresh
            else:
                self._replica = fresh

    def _execute(self, conn: Any, operation: Operation) -> Status:
        dataset = self._dataset
        match operation:
            case Insert(records=records):
                return self._insert(conn, records)
            case Read(key=key):
                rows = self._fetch(conn, self._statement("read"), [key])
                return Status(ok=True, rows=min(rows, 1) if self._joined_reads else rows)
            case Update(key=key, fields=fields):
                params = sql.update_params(dataset, key, fields)
                return Status(ok=True, rows=self._write(conn, self._statement("update"), params))
            case Scan(start_key=start, count=count):
                return Status(
                    ok=True, rows=self._fetch(conn, self._statement("scan", count), [start])
                )
            case ReadModifyWrite(key=key, fields=fields):
                # Autocommit: the read and the write are two statements, as in YCSB F.
                # The read fetches the record the write changes, by its key.
                self._fetch(conn, self._statement("record"), [key])
                params = sql.update_params(dataset, key, fields)
                return Status(ok=True, rows=self._write(conn, self._statement("update"), params))
            case Query(kind=name, number=number, number1=number1):
                statement = self._dialect.query_statement(dataset, name)
                params = sql.query_params(name, number, number1)
                return Status(ok=True, rows=self._fetch(conn, statement, params))
        raise TypeError(f"unknown operation {operation!r}")

    def _insert(self, conn: Any, records: tuple[dict[str, object], ...]) -> Status:
        statement = self._statement("insert", len(records))
        params = sql.insert_params(self._dataset, records)
        if not self._has_children:
            self._write(conn, statement, params)
            return Status(ok=True, rows=len(records))
        # news, vehicle: the rows and their child rows (tags, items) in one
        # transaction (one logical write); a batch may have no items.
        child_params = sql.child_params(self._dataset, records)
        self._begin(conn)
        self._write(conn, statement, params)
        if child_params:
            rows = len(child_params) // sql.child_width(self._dataset)
            self._write(conn, self._statement("child", rows), child_params)
        self._commit(conn)
        return Status(ok=True, rows=len(records))

    def drain(self) -> None:
        return None  # every statement is acknowledged (durability is the server's setting)

    def close(self) -> None:
        for handle in self._handles.values():
            try:
                handle.close()
            except self._errors as exc:
                log.debug("closing %s: %s", type(handle).__name__, exc)
        self._handles = {}
        for conn, _ in self._connections.values():
            try:
                conn.close()
            except self._errors as exc:
                log.debug("closing connection: %s", exc)
