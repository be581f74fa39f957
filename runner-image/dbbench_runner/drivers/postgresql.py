"""PostgreSQL through psycopg 3 (its C or binary build; which one is recorded).

One database call per operation, autocommit: a read, update or scan is one
statement; a readModifyWrite two (as YCSB F); an insert one statement, or for
news and vehicle one transaction with the child rows (BEGIN and COMMIT are
round trips of their own, as START TRANSACTION and COMMIT are on MySQL).
Operations run through psycopg's libpq wrapper (drivers/postgresql_pq.py:
the cursor's Python machinery doubled the client CPU per read), as prepared
statements with parameters bound by the server (`runner.statements`
prepared, the default here) or as statement texts with literal values
(simple: the simple query protocol, and then no connection of the runner
prepares anything, psycopg's own automatic preparing switched off too).
A prepared batch beyond the protocol's 65,535 parameters is sent as one
statement with client-side binding (psycopg's ClientCursor). Setup,
settings and storage use cursors.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import psycopg
from psycopg import sql as pgsql

from dbbench_runner.config import StepConfig, password
from dbbench_runner.datasets import DatasetGenerator
from dbbench_runner.drivers.base import (
    CounterSample,
    DatabaseUnreachableError,
    ServerInfo,
    StorageSample,
    with_retries,
)
from dbbench_runner.drivers.postgresql_pq import Session, SimpleSession, open_session
from dbbench_runner.drivers.sql_base import SqlDriver, replica_for
from dbbench_runner.schema import postgresql as sql
from dbbench_runner.schema.sql import storage_tables

log = logging.getLogger(__name__)
# A refused login carries no SQLSTATE (libpq reports the server's FATAL as text):
# wrong password, no such role, refused by pg_hba.conf, no such database.
# Retrying cannot help any of them.
PERMANENT_LOGIN_ERRORS = (
    "password authentication failed",
    "no pg_hba.conf entry",
    "does not exist",
)
MAINTENANCE_DATABASE = "postgres"
# Serializes the DDL of pods preparing at once (concurrent CREATE TABLE IF NOT
# EXISTS can fail on the catalog's unique index); any constant works.
PREPARE_LOCK = 0x6462_6265_6E63_68  # "dbbench"
DUPLICATE_DATABASE = "42P04"


def describe() -> dict[str, str]:
    """driver, version, implementation (c: compiled against libpq; binary: the wheel's own)."""
    libpq = psycopg.pq.version()
    return {
        "driver": "psycopg",
        "version": psycopg.__version__,
        "implementation": f"{psycopg.pq.__impl__} (libpq {libpq // 10000}.{libpq % 10000})",
    }


class PostgresDriver(SqlDriver[Session]):
    """Operations through each connection's Session (prepared or simple); setup through
    cursors."""

    @classmethod
    def connect(
        cls, config: StepConfig, dataset: DatasetGenerator, worker: int, *, control: bool = False
    ) -> PostgresDriver:
        """Workers open the database; the control connection creates it first when missing."""
        target = config.target
        assert target.host is not None  # config validation: host and port for SQL engines
        assert target.port is not None
        log.info("%s %s, %s", *describe().values())
        primary = _args(config, target.host, target.port, target.database)
        opened = _open_control(config, primary) if control else _connect(config, primary)
        roles: dict[str, Any] = {"primary": (opened, primary)}
        endpoint = replica_for(config, worker)
        if endpoint is not None:
            replica = _args(config, endpoint.host, endpoint.port, target.database)
            roles["replica"] = (_connect(config, replica), replica)
        return cls(config, dataset, sql.DIALECT, roles, (psycopg.Error,))

    def prepare(self) -> None:
        """Tables, indexes and fixed rows in one transaction under an advisory lock."""
        with self._primary.transaction():
            cursor = self._primary.cursor()
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [PREPARE_LOCK])
            for statement in self._dialect.create_statements(
                self._dataset, self._config.phase.id_mode
            ):
                cursor.execute(statement)
            for statement, params in self._dialect.fill_statements(self._dataset):
                cursor.execute(statement, params)
            cursor.close()

    def _open_handle(self, conn: Any) -> Session:
        return open_session(conn, prepared=self._config.statement_mode == "prepared")

    def _fetch(self, conn: Any, statement: str, params: list[object]) -> int:
        return self._handle(conn).fetch(statement, params)

    def _write(self, conn: Any, statement: str, params: list[object]) -> int:
        session = self._handle(conn)
        # A simple statement's values are text in it: no parameter limit.
        if isinstance(session, SimpleSession) or len(params) <= sql.MAX_PARAMETERS:
            return session.write(statement, params)
        with psycopg.ClientCursor(conn) as cursor:
            cursor.execute(statement, params)
            return cursor.rowcount

    def _begin(self, conn: Any) -> None:
        self._handle(conn).command(b"BEGIN")

    def _commit(self, conn: Any) -> None:
        self._handle(conn).command(b"COMMIT")

    def _after_error(self, conn: Any, exc: BaseException) -> bool:
        if conn.closed:
            return False
        session = self._handles.get(id(conn))
        if session is not None and session.in_transaction:
            try:
                session.command(b"ROLLBACK")
            except psycopg.Error as again:
                log.debug("rollback after %s failed: %s", exc, again)
        return True

    def _reopen(self, args: Any) -> Any:
        return _unprepared(self._config, psycopg.connect(**args))

    def _code(self, exc: BaseException) -> object:
        return getattr(exc, "sqlstate", None)

    def _query_all(self, statement: str, params: tuple[object, ...] = ()) -> list[Any]:
        with self._primary.cursor() as cursor:
            cursor.execute(statement, params)
            return list(cursor.fetchall())

    def server_info(self) -> ServerInfo:
        rows = self._query_all(sql.SETTINGS_STATEMENT, (list(sql.SETTINGS),))
        settings = {str(name): str(value) for name, value in rows}
        cache = settings.pop("shared_buffers_bytes", "")
        uptime = self._query_all(sql.UPTIME_STATEMENT, ())
        return ServerInfo(
            engine="postgresql",
            version=settings.get("server_version", "unknown"),
            settings=settings,
            cache_bytes=int(cache) if cache.isdigit() else None,
            client={**describe(), "statements": str(self._config.statement_mode)},
            uptime_seconds=float(uptime[0][0]),
        )

    def storage(self) -> StorageSample:
        tables = list(storage_tables(self._dataset))
        rows = self._query_all(sql.STORAGE_STATEMENT, (self._dataset.table, tables))
        data, index, total, records = (int(v) for v in rows[0])
        return StorageSample(data, index, total, records)

    def disk_reads(self) -> CounterSample | None:
        # The statistics are a snapshot per transaction: clear it to read the
        # counter as it is now (backends flush their counts about once a second).
        rows = self._query_all(sql.DISK_READS_STATEMENT, ())
        return CounterSample(sql.DISK_READS, int(rows[0][1])) if rows else None


def _args(config: StepConfig, host: str, port: int, database: str) -> dict[str, Any]:
    target = config.target
    return {
        "host": host,
        "port": port,
        "user": target.user or "postgres",
        "password": password(target) or "",
        "dbname": database,
        # libpq takes whole seconds (at least 2); round up so a fraction never becomes 0.
        "connect_timeout": max(2, math.ceil(target.connect_timeout)),
        "autocommit": True,
        "application_name": f"dbbench-runner-{config.pod.index}",
    }


def _unprepared(config: StepConfig, conn: Any) -> Any:
    """simple: psycopg must not prepare the cursors' statements either (it does so
    after a statement's fifth execution); prepared keeps psycopg's default."""
    if config.statement_mode == "simple":
        conn.prepare_threshold = None
    return conn


def _connect(config: StepConfig, args: dict[str, Any]) -> Any:
    return with_retries(
        lambda: _unprepared(config, psycopg.connect(**args)),
        what=f"postgresql at {args['host']}:{args['port']}",
        attempts=config.target.connect_retries,
        retry_on=(psycopg.OperationalError,),
        permanent=lambda exc: any(text in str(exc) for text in PERMANENT_LOGIN_ERRORS),
    )


def _open_control(config: StepConfig, args: dict[str, Any]) -> Any:
    """The target database, created first when the server says it does not exist."""
    try:
        return _connect(config, args)
    except DatabaseUnreachableError as exc:
        if f'database "{args["dbname"]}" does not exist' not in str(exc.__cause__):
            raise
    _create_database(config, args)
    return _connect(config, args)


def _create_database(config: StepConfig, args: dict[str, Any]) -> None:
    """CREATE DATABASE (PostgreSQL has no IF NOT EXISTS for it), from the maintenance one."""
    maintenance = _connect(config, {**args, "dbname": MAINTENANCE_DATABASE})
    try:
        name = args["dbname"]
        found = maintenance.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
        if found.fetchone() is None:
            try:
                maintenance.execute(pgsql.SQL("CREATE DATABASE {}").format(pgsql.Identifier(name)))
            except psycopg.Error as exc:
                if exc.sqlstate != DUPLICATE_DATABASE:  # another pod was first
                    raise
    finally:
        maintenance.close()
