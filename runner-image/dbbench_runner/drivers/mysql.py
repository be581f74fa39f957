"""MySQL 8.4 and MariaDB through mysqlclient (default) or mysql-connector-python.

The client library is the step's `mysqlDriver` (drivers/mysql_clients.py);
which one runs, and how (C library, C extension, pure Python), is logged and
recorded in environment.json. Statements use the text protocol with the
library's escaping: one round trip per operation. The connector's prepared
cursor sends COM_STMT_RESET before every execute, a second round trip that
made point reads ~40% slower (measured on MariaDB, pure-Python connector);
docs/decisions.md.
"""

from __future__ import annotations

import logging
from typing import Any

from dbbench_runner.config import StepConfig, password
from dbbench_runner.datasets import DatasetGenerator
from dbbench_runner.drivers.base import CounterSample, ServerInfo, StorageSample, with_retries
from dbbench_runner.drivers.mysql_clients import ConnectArgs, MySQLClient, client_for
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
from dbbench_runner.schema import mysql as sql

log = logging.getLogger(__name__)
# Lost-connection errors after which one reconnect is attempted.
CONNECTION_ERRNOS = {2006, 2013, 2055}
# Access denied / unknown database: retrying cannot help.
PERMANENT_ERRNOS = {1044, 1045, 1049, 1698}
DEADLOCK = 1213
FILL_ATTEMPTS = 5


def _connect(client: MySQLClient, config: StepConfig, args: ConnectArgs) -> Any:
    return with_retries(
        lambda: client.connect(args),
        what=f"{config.target.engine} at {args.host}:{args.port}",
        attempts=config.target.connect_retries,
        retry_on=client.errors,
        permanent=lambda exc: client.errno(exc) in PERMANENT_ERRNOS,
    )


def _args(config: StepConfig, host: str, port: int, database: str | None) -> ConnectArgs:
    target = config.target
    return ConnectArgs(
        host=host,
        port=port,
        user=target.user or "root",
        password=password(target) or "",
        database=database,
        timeout=target.connect_timeout,
    )


class MySQLDriver:
    def __init__(
        self,
        config: StepConfig,
        dataset: DatasetGenerator,
        client: MySQLClient,
        connections: dict[str, tuple[Any, ConnectArgs]],
    ) -> None:
        self._config = config
        self._dataset = dataset
        self._client = client
        self._errors = client.errors
        # "primary" and optionally "replica": the connection and how to reopen it.
        self._connections = connections
        self._primary: Any = connections["primary"][0]
        self._replica: Any | None = connections["replica"][0] if "replica" in connections else None
        self._cursors: dict[int, Any] = {}
        self._has_children = sql.has_child_table(dataset)
        # vehicle's read joins one row per item; such a read counts the one object it rebuilds.
        self._joined_reads = sql.read_is_joined(dataset)
        self._in_transaction = False
        # Statement texts depend only on (kind, batch size): build each once.
        self._statements: dict[tuple[str, int], str] = {}

    @classmethod
    def connect(
        cls, config: StepConfig, dataset: DatasetGenerator, worker: int, *, control: bool = False
    ) -> MySQLDriver:
        """Worker connections open the database; the control one may create it first."""
        target = config.target
        # config validation guarantees host and port for these engines
        assert target.host is not None
        assert target.port is not None
        client = client_for(config.mysql_driver)
        described = client.describe()
        log.info("%s %s, %s", *described.values())
        database = None if control else target.database
        primary = _args(config, target.host, target.port, database)
        connections = {"primary": (_connect(client, config, primary), primary)}
        if config.phase.read_preference != "primary" and target.replicas:
            endpoint = target.replicas[worker % len(target.replicas)]
            replica = _args(config, endpoint.host, endpoint.port, target.database)
            connections["replica"] = (_connect(client, config, replica), replica)
        return cls(config, dataset, client, connections)

    def prepare(self) -> None:
        database = self._config.target.database
        cursor = self._primary.cursor()
        try:
            cursor.execute(f"CREATE DATABASE IF NOT EXISTS `{database}`")
            cursor.execute(f"USE `{database}`")
            for statement in sql.create_statements(self._dataset, self._config.phase.id_mode):
                cursor.execute(statement)
            for statement, params in sql.fill_statements(self._dataset):
                self._fill(cursor, statement, params)
        finally:
            cursor.close()

    def _fill(self, cursor: Any, statement: str, params: list[object]) -> None:
        """INSERT IGNORE of fixed rows; pods filling at once may deadlock: retry."""
        for attempt in range(FILL_ATTEMPTS):
            try:
                cursor.execute(statement, params)
            except self._errors as exc:
                if self._client.errno(exc) != DEADLOCK or attempt == FILL_ATTEMPTS - 1:
                    raise
                log.info("filling a lookup table deadlocked; retrying")
            else:
                return

    def _statement(self, kind: str, size: int = 0) -> str:
        key = (kind, size)
        statement = self._statements.get(key)
        if statement is None:
            statement = self._statements[key] = _build(self._dataset, kind, size)
        return statement

    def _cursor(self, conn: Any) -> Any:
        """One reusable text-protocol cursor per connection."""
        cursor = self._cursors.get(id(conn))
        if cursor is None:
            cursor = self._cursors[id(conn)] = conn.cursor()
        return cursor

    def execute(self, operation: Operation) -> Status:
        conn = self._primary
        if self._replica is not None and getattr(operation, "secondary_ok", False):
            conn = self._replica
        try:
            return self._execute(conn, operation)
        except self._errors as exc:
            self._recover(conn, exc)
            return Status.failed(f"{type(exc).__name__}({self._client.errno(exc)})")

    def _recover(self, conn: Any, exc: BaseException) -> None:
        """Roll back what an error left open; reopen a lost connection once."""
        if self._in_transaction:
            self._in_transaction = False
            try:
                conn.rollback()
            except self._errors as again:
                log.debug("rollback after %s failed: %s", exc, again)
        if self._client.errno(exc) not in CONNECTION_ERRNOS:
            return
        self._cursors.pop(id(conn), None)
        for role, (known, args) in self._connections.items():
            if known is not conn:
                continue
            try:
                fresh = self._client.connect(args)
            except self._errors as again:
                log.warning("reconnecting after %s failed: %s", exc, again)
                return
            self._connections[role] = (fresh, args)
            if role == "primary":
                self._primary = fresh
            else:
                self._replica = fresh

    def _fetch(self, conn: Any, statement: str, params: list[object]) -> Status:
        rows = self._client.fetch(conn, self._cursor(conn), statement, params)
        return Status(ok=True, rows=rows)

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
                statement = self._statement("update")
                cursor = self._cursor(conn)
                cursor.execute(statement, params)
                return Status(ok=True, rows=cursor.rowcount)
            case Scan(start_key=start, count=count):
                return self._fetch(conn, self._statement("scan", count), [start])
            case ReadModifyWrite(key=key, fields=fields):
                # Autocommit: the read and the write are two statements, as in YCSB F.
                # The read fetches the record the write changes, by its key.
                self._fetch(conn, self._statement("record"), [key])
                cursor = self._cursor(conn)
                cursor.execute(self._statement("update"), sql.update_params(dataset, key, fields))
                return Status(ok=True, rows=cursor.rowcount)
            case Query(kind=name, number=number, number1=number1):
                params = sql.query_params(name, number, number1)
                return self._fetch(conn, sql.query_statement(self._dataset, name), params)
        raise TypeError(f"unknown operation {operation!r}")

    def _insert(self, conn: Any, records: tuple[dict[str, object], ...]) -> Status:
        statement = self._statement("insert", len(records))
        params = sql.insert_params(self._dataset, records)
        if not self._has_children:
            self._cursor(conn).execute(statement, params)
            return Status(ok=True, rows=len(records))
        # news, vehicle: the rows and their child rows (tags, items) in one
        # transaction (one logical write); a batch may have no items.
        child_params = sql.child_params(self._dataset, records)
        cursor = self._cursor(conn)
        self._in_transaction = True
        cursor.execute("START TRANSACTION")
        cursor.execute(statement, params)
        if child_params:
            rows = len(child_params) // sql.child_width(self._dataset)
            cursor.execute(self._statement("child", rows), child_params)
        conn.commit()
        self._in_transaction = False
        return Status(ok=True, rows=len(records))

    def _query_all(self, statement: str, params: tuple[object, ...] = ()) -> list[Any]:
        cursor = self._primary.cursor()
        try:
            cursor.execute(statement, params)
            return list(cursor.fetchall())
        finally:
            cursor.close()

    def drain(self) -> None:
        return None  # every statement is acknowledged (durability is the server's setting)

    def server_info(self) -> ServerInfo:
        rows = self._query_all(sql.settings_statement())
        settings = {str(name).lower(): str(value) for name, value in rows}
        pool = settings.get("innodb_buffer_pool_size")
        return ServerInfo(
            engine=self._config.target.engine,
            version=settings.get("version", "unknown"),
            settings=settings,
            cache_bytes=int(pool) if pool and pool.isdigit() else None,
            client=self._client.describe(),
        )

    def storage(self) -> StorageSample:
        rows = self._query_all(
            sql.storage_statement(self._dataset),
            (self._dataset.table, self._config.target.database, *sql.storage_tables(self._dataset)),
        )
        data, index, total, records = (int(v) for v in rows[0])
        return StorageSample(data, index, total, records)

    def disk_reads(self) -> CounterSample | None:
        rows = self._query_all(sql.disk_reads_statement())
        return CounterSample(sql.DISK_READS, int(rows[0][1])) if rows else None

    def close(self) -> None:
        for cursor in self._cursors.values():
            try:
                cursor.close()
            except self._errors as exc:
                log.debug("closing cursor: %s", exc)
        self._cursors = {}
        for conn, _ in self._connections.values():
            try:
                conn.close()
            except self._errors as exc:
                log.debug("closing connection: %s", exc)


def _build(dataset: DatasetGenerator, kind: str, size: int) -> str:
    if kind == "read":
        return sql.read_statement(dataset)
    if kind == "record":
        return sql.record_read_statement(dataset)
    if kind == "update":
        return sql.update_statement(dataset)
    if kind == "scan":
        return sql.scan_statement(dataset, size)
    if kind == "insert":
        return sql.insert_statement(dataset, size)
    if kind == "child":
        return sql.child_statement(dataset, size)
    raise ValueError(f"unknown statement kind {kind}")
