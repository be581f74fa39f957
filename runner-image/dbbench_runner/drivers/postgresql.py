"""PostgreSQL through psycopg 3 (its C or binary build; which one is recorded).

One database call per operation, autocommit: a read, update or scan is one
statement; a readModifyWrite two (as YCSB F); an insert one statement, or for
news and vehicle one transaction with the child rows (BEGIN and COMMIT are
round trips of their own, as START TRANSACTION and COMMIT are on MySQL).
Operations run as prepared statements, parameters bound by the server,
through psycopg's libpq wrapper (drivers/postgresql_pq.py: the cursor's
Python machinery doubled the client CPU per read). A batch beyond the
protocol's 65,535 parameters is sent as one statement with client-side
binding (psycopg's ClientCursor). Setup, settings and storage use cursors.
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
from dbbench_runner.drivers.postgresql_pq import PreparedSession
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
from dbbench_runner.schema import postgresql as sql

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


class PostgresDriver:
    def __init__(
        self, config: StepConfig, dataset: DatasetGenerator, roles: dict[str, Any]
    ) -> None:
        self._config = config
        self._dataset = dataset
        # "primary" and optionally "replica": (connection, connect keyword arguments).
        self._roles = roles
        self._primary: Any = roles["primary"][0]
        self._replica: Any | None = roles["replica"][0] if "replica" in roles else None
        self._sessions: dict[int, PreparedSession] = {}
        self._has_children = sql.has_child_table(dataset)
        self._joined_reads = sql.read_is_joined(dataset)
        self._statements: dict[tuple[str, int], str] = {}

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
        if config.phase.read_preference != "primary" and target.replicas:
            endpoint = target.replicas[worker % len(target.replicas)]
            replica = _args(config, endpoint.host, endpoint.port, target.database)
            roles["replica"] = (_connect(config, replica), replica)
        return cls(config, dataset, roles)

    def prepare(self) -> None:
        """Tables, indexes and fixed rows in one transaction under an advisory lock."""
        with self._primary.transaction():
            cursor = self._primary.cursor()
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [PREPARE_LOCK])
            for statement in sql.create_statements(self._dataset, self._config.phase.id_mode):
                cursor.execute(statement)
            for statement, params in sql.fill_statements(self._dataset):
                cursor.execute(statement, params)
            cursor.close()

    def _statement(self, kind: str, size: int = 0) -> str:
        key = (kind, size)
        statement = self._statements.get(key)
        if statement is None:
            statement = self._statements[key] = _build(self._dataset, kind, size)
        return statement

    def _session(self, conn: Any) -> PreparedSession:
        session = self._sessions.get(id(conn))
        if session is None:
            session = self._sessions[id(conn)] = PreparedSession(conn)
        return session

    def execute(self, operation: Operation) -> Status:
        conn = self._primary
        if self._replica is not None and getattr(operation, "secondary_ok", False):
            conn = self._replica
        try:
            return self._execute(conn, operation)
        except psycopg.Error as exc:
            self._recover(conn, exc)
            return Status.failed(f"{type(exc).__name__}({exc.sqlstate})")

    def _recover(self, conn: Any, exc: BaseException) -> None:
        """Roll back what an error left open; reopen a lost connection once."""
        session = self._sessions.get(id(conn))
        if not conn.closed:
            if session is not None and session.in_transaction:
                try:
                    session.command(b"ROLLBACK")
                except psycopg.Error as again:
                    log.debug("rollback after %s failed: %s", exc, again)
            return
        self._sessions.pop(id(conn), None)
        for role, (known, args) in self._roles.items():
            if known is not conn:
                continue
            try:
                fresh = psycopg.connect(**args)
            except psycopg.Error as again:
                log.warning("reconnecting after %s failed: %s", exc, again)
                return
            self._roles[role] = (fresh, args)
            if role == "primary":
                self._primary = fresh
            else:
                self._replica = fresh

    def _fetch(self, conn: Any, statement: str, params: list[object]) -> Status:
        return Status(ok=True, rows=self._session(conn).fetch(statement, params))

    def _execute(self, conn: Any, operation: Operation) -> Status:
        dataset = self._dataset
        match operation:
            case Insert(records=records):
                return self._insert(conn, records)
            case Read(key=key):
                status = self._fetch(conn, self._statement("read"), [key])
                if self._joined_reads:
                    status.rows = min(status.rows, 1)
                return status
            case Update(key=key, fields=fields):
                params = sql.update_params(dataset, key, fields)
                return Status(
                    ok=True, rows=self._session(conn).write(self._statement("update"), params)
                )
            case Scan(start_key=start, count=count):
                return self._fetch(conn, self._statement("scan", count), [start])
            case ReadModifyWrite(key=key, fields=fields):
                # Autocommit: two statements, as in YCSB F; the read fetches the written record.
                self._fetch(conn, self._statement("record"), [key])
                params = sql.update_params(dataset, key, fields)
                return Status(
                    ok=True, rows=self._session(conn).write(self._statement("update"), params)
                )
            case Query(kind=name, number=number, number1=number1):
                return self._fetch(
                    conn,
                    sql.query_statement(self._dataset, name),
                    sql.query_params(name, number, number1),
                )
        raise TypeError(f"unknown operation {operation!r}")

    def _write(self, conn: Any, statement: str, params: list[object]) -> None:
        if len(params) <= sql.MAX_PARAMETERS:
            self._session(conn).write(statement, params)
            return
        with psycopg.ClientCursor(conn) as cursor:
            cursor.execute(statement, params)

    def _insert(self, conn: Any, records: tuple[dict[str, object], ...]) -> Status:
        statement = self._statement("insert", len(records))
        params = sql.insert_params(self._dataset, records)
        if not self._has_children:
            self._write(conn, statement, params)
            return Status(ok=True, rows=len(records))
        # news, vehicle: the rows and their child rows in one transaction.
        child_params = sql.child_params(self._dataset, records)
        session = self._session(conn)
        session.command(b"BEGIN")
        self._write(conn, statement, params)
        if child_params:
            rows = len(child_params) // sql.child_width(self._dataset)
            self._write(conn, self._statement("child", rows), child_params)
        session.command(b"COMMIT")
        return Status(ok=True, rows=len(records))

    def _query_all(self, statement: str, params: tuple[object, ...] = ()) -> list[Any]:
        with self._primary.cursor() as cursor:
            cursor.execute(statement, params)
            return list(cursor.fetchall())

    def drain(self) -> None:
        return None  # every statement is acknowledged (durability is the server's setting)

    def server_info(self) -> ServerInfo:
        rows = self._query_all(sql.SETTINGS_STATEMENT, (list(sql.SETTINGS),))
        settings = {str(name): str(value) for name, value in rows}
        cache = settings.pop("shared_buffers_bytes", "")
        return ServerInfo(
            engine="postgresql",
            version=settings.get("server_version", "unknown"),
            settings=settings,
            cache_bytes=int(cache) if cache.isdigit() else None,
            client=describe(),
        )

    def storage(self) -> StorageSample:
        tables = list(sql.storage_tables(self._dataset))
        rows = self._query_all(sql.STORAGE_STATEMENT, (self._dataset.table, tables))
        data, index, total, records = (int(v) for v in rows[0])
        return StorageSample(data, index, total, records)

    def disk_reads(self) -> CounterSample | None:
        # The statistics are a snapshot per transaction: clear it to read the
        # counter as it is now (backends flush their counts about once a second).
        rows = self._query_all(sql.DISK_READS_STATEMENT, ())
        return CounterSample(sql.DISK_READS, int(rows[0][1])) if rows else None

    def close(self) -> None:
        self._sessions = {}
        for conn, _ in self._roles.values():
            conn.close()


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


def _connect(config: StepConfig, args: dict[str, Any]) -> Any:
    return with_retries(
        lambda: psycopg.connect(**args),
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


def _build(dataset: DatasetGenerator, kind: str, size: int) -> str:
    builders = {
        "read": lambda: sql.read_statement(dataset),
        "record": lambda: sql.record_read_statement(dataset),
        "update": lambda: sql.update_statement(dataset),
        "scan": lambda: sql.scan_statement(dataset, size),
        "insert": lambda: sql.insert_statement(dataset, size),
        "child": lambda: sql.child_statement(dataset, size),
    }
    if kind not in builders:
        raise ValueError(f"unknown statement kind {kind}")
    return builders[kind]()
