"""MySQL 8.4 and MariaDB through mysqlclient (default) or mysql-connector-python.

The client library is the step's `mysqlDriver` (drivers/mysql_clients.py);
which one runs, and how (C library, C extension, pure Python), is logged and
recorded in environment.json. `runner.statements` simple (the default
here): the text protocol with the library's escaping, one round trip per
operation. prepared (mysql-connector-python only): server-side prepared
statements, one COM_STMT_EXECUTE per statement (drivers/mysql_prepared.py,
which says why the connector's prepared cursor is not used). The mode is
recorded beside the client library.
"""

from __future__ import annotations

import logging
from typing import Any

from dbbench_runner.config import StepConfig, password
from dbbench_runner.datasets import DatasetGenerator
from dbbench_runner.drivers.base import CounterSample, ServerInfo, StorageSample, with_retries
from dbbench_runner.drivers.mysql_clients import ConnectArgs, MySQLClient, client_for
from dbbench_runner.drivers.mysql_prepared import ConnectorStatements
from dbbench_runner.drivers.sql_base import SqlDriver, replica_for
from dbbench_runner.schema import mysql as sql
from dbbench_runner.schema.sql import storage_tables

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


class MySQLDriver(SqlDriver[Any]):
    """Statements through one reusable text-protocol cursor per connection, or its
    prepared statements (ConnectorStatements)."""

    def __init__(
        self,
        config: StepConfig,
        dataset: DatasetGenerator,
        client: MySQLClient,
        connections: dict[str, tuple[Any, ConnectArgs]],
    ) -> None:
        super().__init__(config, dataset, sql.DIALECT, dict(connections), client.errors)
        self._client = client
        self._in_transaction = False
        # StepConfig refuses prepared with mysqlclient (it cannot prepare).
        self._prepared = config.statement_mode == "prepared"
        # Whether this connection's storage samples bypass MySQL 8+'s statistics cache.
        self._uncached_statistics = False

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
        endpoint = replica_for(config, worker)
        if endpoint is not None:
            replica = _args(config, endpoint.host, endpoint.port, target.database)
            connections["replica"] = (_connect(client, config, replica), replica)
        return cls(config, dataset, client, connections)

    def prepare(self) -> None:
        database = self._config.target.database
        cursor = self._primary.cursor()
        try:
            cursor.execute(f"CREATE DATABASE IF NOT EXISTS `{database}`")
            cursor.execute(f"USE `{database}`")
            for statement in self._dialect.create_statements(
                self._dataset, self._config.phase.id_mode
            ):
                cursor.execute(statement)
            for statement, params in self._dialect.fill_statements(self._dataset):
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

    def _open_handle(self, conn: Any) -> Any:
        return ConnectorStatements(conn) if self._prepared else conn.cursor()

    def _fetch(self, conn: Any, statement: str, params: list[object]) -> int:
        if self._prepared:
            return int(self._handle(conn).fetch(statement, params))
        return self._client.fetch(conn, self._handle(conn), statement, params)

    def _write(self, conn: Any, statement: str, params: list[object]) -> int:
        if self._prepared:
            return int(self._handle(conn).write(statement, params))
        cursor = self._handle(conn)
        cursor.execute(statement, params)
        return int(cursor.rowcount)

    def _begin(self, conn: Any) -> None:
        self._in_transaction = True
        self._handle(conn).execute("START TRANSACTION")

    def _commit(self, conn: Any) -> None:
        conn.commit()
        self._in_transaction = False

    def _after_error(self, conn: Any, exc: BaseException) -> bool:
        if self._in_transaction:
            self._in_transaction = False
            try:
                conn.rollback()
            except self._errors as again:
                log.debug("rollback after %s failed: %s", exc, again)
        return self._client.errno(exc) not in CONNECTION_ERRNOS

    def _reopen(self, args: Any) -> Any:
        return self._client.connect(args)

    def _code(self, exc: BaseException) -> object:
        return self._client.errno(exc)

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
        uptime = self._query_all(sql.UPTIME_STATEMENT)
        return ServerInfo(
            engine=self._config.target.engine,
            version=settings.get("version", "unknown"),
            settings=settings,
            cache_bytes=int(pool) if pool and pool.isdigit() else None,
            client={**self._client.describe(), "statements": str(self._config.statement_mode)},
            uptime_seconds=float(uptime[0][1]) if uptime else None,
        )

    def _bypass_statistics_cache(self) -> None:
        """Once per connection, before its first storage sample (schema.mysql says why)."""
        if self._query_all(sql.STATS_EXPIRY_STATEMENT):
            cursor = self._primary.cursor()
            try:
                cursor.execute(sql.NO_STATS_CACHE_STATEMENT)
            finally:
                cursor.close()
        self._uncached_statistics = True

    def storage(self) -> StorageSample:
        if not self._uncached_statistics:
            self._bypass_statistics_cache()
        rows = self._query_all(
            sql.storage_statement(self._dataset),
            (self._dataset.table, self._config.target.database, *storage_tables(self._dataset)),
        )
        data, index, total, records = (int(v) for v in rows[0])
        return StorageSample(data, index, total, records)

    def disk_reads(self) -> CounterSample | None:
        rows = self._query_all(sql.disk_reads_statement())
        return CounterSample(sql.DISK_READS, int(rows[0][1])) if rows else None
