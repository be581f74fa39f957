"""MySQL 8.4 and MariaDB through mysql-connector-python.

The connector's C extension is used where it loads (it needs OpenSSL >= 3.2);
which implementation runs is logged and recorded in environment.json.
Statements use the text protocol with the connector's escaping: one round
trip per operation. The connector's prepared cursor sends COM_STMT_RESET
before every execute, a second round trip that made point reads ~40% slower
(measured on MariaDB, pure-Python connector); docs/decisions.md.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import mysql.connector

from dbbench_runner.config import StepConfig
from dbbench_runner.datasets import DatasetGenerator
from dbbench_runner.drivers.base import ServerInfo, StorageSample, with_retries
from dbbench_runner.operations import Insert, Operation, Query, Read, Scan, Status, Update
from dbbench_runner.schema import mysql as sql

log = logging.getLogger(__name__)
# Lost-connection errors after which one reconnect is attempted.
CONNECTION_ERRNOS = {2006, 2013, 2055}
# Access denied / unknown database: retrying cannot help.
PERMANENT_ERRNOS = {1044, 1045, 1049, 1698}


def implementation() -> str:
    return "C extension" if mysql.connector.HAVE_CEXT else "pure Python"


def _connect(config: StepConfig, host: str, port: int, database: str | None) -> Any:
    target = config.target
    kwargs: dict[str, Any] = {
        "host": host,
        "port": port,
        "user": target.user or "root",
        "password": target.secret() or "",
        # The C extension takes whole seconds only (a float raises TypeError);
        # round up so that a sub-second timeout does not become 0.
        "connection_timeout": math.ceil(target.connect_timeout),
        "autocommit": True,
        "use_pure": not mysql.connector.HAVE_CEXT,
    }
    if database is not None:
        kwargs["database"] = database

    def attempt() -> Any:
        return mysql.connector.connect(**kwargs)

    return with_retries(
        attempt,
        what=f"{target.engine} at {host}:{port}",
        attempts=target.connect_retries,
        retry_on=(mysql.connector.Error,),
        permanent=lambda exc: getattr(exc, "errno", None) in PERMANENT_ERRNOS,
    )


class MySQLDriver:
    def __init__(
        self, config: StepConfig, dataset: DatasetGenerator, primary: Any, replica: Any | None
    ) -> None:
        self._config = config
        self._dataset = dataset
        self._primary = primary
        self._replica = replica
        self._cursors: dict[int, Any] = {}
        self._has_tags = sql.tags_column(dataset) is not None
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
        log.info("mysql-connector-python %s, %s", mysql.connector.__version__, implementation())
        database = None if control else target.database
        primary = _connect(config, target.host, target.port, database)
        replica = None
        if config.phase.read_preference != "primary" and target.replicas:
            endpoint = target.replicas[worker % len(target.replicas)]
            replica = _connect(config, endpoint.host, endpoint.port, target.database)
        return cls(config, dataset, primary, replica)

    def prepare(self) -> None:
        database = self._config.target.database
        cursor = self._primary.cursor()
        try:
            cursor.execute(f"CREATE DATABASE IF NOT EXISTS `{database}`")
            cursor.execute(f"USE `{database}`")
            for statement in sql.create_statements(self._dataset, self._config.phase.id_mode):
                cursor.execute(statement)
        finally:
            cursor.close()

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
        except mysql.connector.Error as exc:
            self._recover(conn, exc)
            return Status.failed(f"{type(exc).__name__}({exc.errno})")

    def _recover(self, conn: Any, exc: Any) -> None:
        try:
            if conn.in_transaction:
                conn.rollback()
            if exc.errno in CONNECTION_ERRNOS:
                self._cursors.pop(id(conn), None)
                conn.reconnect(attempts=1, delay=0)
        except mysql.connector.Error as again:
            log.warning("recovering after %s failed: %s", exc, again)

    def _fetch(self, conn: Any, statement: str, params: list[object]) -> Status:
        cursor = self._cursor(conn)
        cursor.execute(statement, params)
        return Status(ok=True, rows=len(cursor.fetchall()))

    def _execute(self, conn: Any, operation: Operation) -> Status:
        dataset = self._dataset
        match operation:
            case Insert(records=records):
                return self._insert(conn, records)
            case Read(key=key):
                return self._fetch(conn, self._statement("read"), [key])
            case Update(key=key, fields=fields):
                params = sql.update_params(dataset, key, fields)
                statement = self._statement("update")
                cursor = self._cursor(conn)
                cursor.execute(statement, params)
                return Status(ok=True, rows=cursor.rowcount)
            case Scan(start_key=start, count=count):
                return self._fetch(conn, self._statement("scan", count), [start])
            case Query(kind=name, number=number, number1=number1):
                params = sql.query_params(name, number, number1)
                return self._fetch(conn, sql.QUERIES[name], params)
        raise TypeError(f"unknown operation {operation!r}")

    def _insert(self, conn: Any, records: tuple[dict[str, object], ...]) -> Status:
        statement = self._statement("insert", len(records))
        params = sql.insert_params(self._dataset, records)
        if not self._has_tags:
            self._cursor(conn).execute(statement, params)
            return Status(ok=True, rows=len(records))
        # news: the row and its tag rows in one transaction (one logical write).
        tag_params = sql.tags_params(self._dataset, records)
        tags_statement = self._statement("tags", len(tag_params) // 3)
        conn.start_transaction()
        self._cursor(conn).execute(statement, params)
        self._cursor(conn).execute(tags_statement, tag_params)
        conn.commit()
        return Status(ok=True, rows=len(records))

    def _query_all(self, statement: str, params: tuple[object, ...] = ()) -> list[Any]:
        cursor = self._primary.cursor()
        try:
            cursor.execute(statement, params)
            return list(cursor.fetchall())
        finally:
            cursor.close()

    def server_info(self) -> ServerInfo:
        rows = self._query_all(sql.settings_statement())
        settings = {str(name).lower(): str(value) for name, value in rows}
        pool = settings.get("innodb_buffer_pool_size")
        return ServerInfo(
            engine=self._config.target.engine,
            version=settings.get("version", "unknown"),
            settings=settings,
            cache_bytes=int(pool) if pool and pool.isdigit() else None,
            client={
                "driver": "mysql-connector-python",
                "version": str(mysql.connector.__version__),
                "implementation": implementation(),
            },
        )

    def storage(self) -> StorageSample:
        rows = self._query_all(sql.storage_statement(), (self._config.target.database,))
        data, index, total, records = (int(v) for v in rows[0])
        return StorageSample(data, index, total, records)

    def close(self) -> None:
        for cursor in self._cursors.values():
            try:
                cursor.close()
            except mysql.connector.Error as exc:
                log.debug("closing cursor: %s", exc)
        self._cursors = {}
        for conn in (self._primary, self._replica):
            if conn is not None:
                try:
                    conn.close()
                except mysql.connector.Error as exc:
                    log.debug("closing connection: %s", exc)


def _build(dataset: DatasetGenerator, kind: str, size: int) -> str:
    if kind == "read":
        return sql.read_statement(dataset)
    if kind == "update":
        return sql.update_statement(dataset)
    if kind == "scan":
        return sql.scan_statement(dataset, size)
    if kind == "insert":
        return sql.insert_statement(dataset, size)
    if kind == "tags":
        return sql.tags_statement(dataset, size)
    raise ValueError(f"unknown statement kind {kind}")
