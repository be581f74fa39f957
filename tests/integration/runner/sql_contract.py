"""The driver contract for the MySQL-protocol engines: the parts MariaDB and MySQL share.

A subclass names the engine and the session fixture of its real server; the
statements the runner sends differ by nothing but the server answering them.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar, Protocol

import mysql.connector
import pytest

from dbbench_runner.datasets import DatasetGenerator
from dbbench_runner.running import run_step
from dbbench_runner.schema import sql as schema
from tests.integration.runner.driver_contract import DriverContract
from tests.integration.runner.vehicle_contract import VehicleSqlContract


class SqlServer(Protocol):
    """What the contract needs of a fixture server (MariaDBServer, MySQLServer)."""

    port: int
    root_password: str

    def connect_args(self) -> dict[str, object]: ...


def connect(server: SqlServer, database: str | None = None) -> Any:
    args = server.connect_args()
    if database:
        args["database"] = database
    return mysql.connector.connect(**args)


def fetch_all(server: SqlServer, statement: str, database: str | None = None) -> list[Any]:
    """`statement` on a connection of its own; its rows as tuples (none for a statement
    that returns none)."""
    conn = connect(server, database)
    try:
        cursor = conn.cursor()
        cursor.execute(statement)
        return list(cursor.fetchall()) if cursor.with_rows else []
    finally:
        conn.close()


def rows(server: SqlServer, database: str, statement: str) -> list[dict[str, Any]]:
    conn = connect(server, database)
    try:
        cursor = conn.cursor(dictionary=True)
        cursor.execute(statement)
        return list(cursor.fetchall())
    finally:
        conn.close()


class SqlContract(DriverContract, VehicleSqlContract):
    """Abstract: subclasses set `engine` and define the fixture `server`."""

    engine: ClassVar[str]
    disk_reads_counter: ClassVar[str | None] = "Innodb_buffer_pool_reads"

    @pytest.fixture(params=["mysqlclient", "mysql-connector-python"])
    def mysql_driver(self, request: pytest.FixtureRequest) -> str:
        """Every contract test runs once per client library the runner offers."""
        self.settings = {"mysqlDriver": request.param}
        return str(request.param)

    @pytest.fixture
    def target(self, server: SqlServer, mysql_driver: str) -> Iterator[dict[str, Any]]:
        del mysql_driver  # parametrizes the test; its value is in self.settings
        database = f"c_{uuid.uuid4().hex[:12]}"
        target = {
            "name": self.engine,
            "engine": self.engine,
            "host": "127.0.0.1",
            "port": server.port,
            "user": "root",
            "password": server.root_password,
            "database": database,
        }
        yield target
        self.drop_database(target)

    def drop_database(self, target: dict[str, Any]) -> None:
        conn = connect(self.server)
        try:
            conn.cursor().execute(f"DROP DATABASE IF EXISTS `{target['database']}`")
        finally:
            conn.close()

    @pytest.fixture(params=[{"batchSize": 1}, {"batchSize": 25}], ids=["single", "batch25"])
    def insert_variant(self, request: pytest.FixtureRequest) -> dict[str, Any]:
        return dict(request.param)

    @pytest.fixture(autouse=True)
    def _server(self, server: SqlServer) -> None:
        self.server = server

    def key_indexed(self, target: dict[str, Any], dataset: DatasetGenerator) -> bool:
        found = self.sql(
            target,
            "SELECT index_name AS i FROM information_schema.statistics "
            "WHERE table_schema = %s AND table_name = %s AND column_name = %s",
            target["database"], dataset.table, dataset.key_column,
        )  # fmt: skip
        return bool(found)

    def keyed_by(self, target: dict[str, Any], dataset: DatasetGenerator) -> str:
        found = self.sql(
            target,
            "SELECT column_name AS c FROM information_schema.key_column_usage "
            "WHERE table_schema = %s AND table_name = %s AND constraint_name = 'PRIMARY'",
            target["database"], dataset.table,
        )  # fmt: skip
        if [r["c"] for r in found] == [dataset.key_column]:
            return "record key"
        return "server" if not found else f"primary key {found}"

    def sql(self, target: dict[str, Any], statement: str, *params: object) -> list[dict[str, Any]]:
        conn = connect(self.server, target["database"])
        try:
            cursor = conn.cursor(dictionary=True)
            cursor.execute(statement, params)
            return list(cursor.fetchall())
        finally:
            conn.close()

    def stored(
        self, target: dict[str, Any], dataset: DatasetGenerator, id_mode: str
    ) -> list[dict[str, Any]]:
        del id_mode  # the key column is stored either way
        database = target["database"]
        key = dataset.key_column
        found = rows(self.server, database, f"SELECT * FROM `{dataset.table}` ORDER BY `{key}`")
        tags = schema.tags_column(dataset)
        if tags is not None:
            by_key: dict[Any, list[str]] = {}
            table = schema.tags_table(dataset)
            for row in rows(
                self.server, database, f"SELECT * FROM `{table}` ORDER BY `{key}`, position"
            ):
                by_key.setdefault(row[key], []).append(row["tag"])
            for row in found:
                row[tags.name] = by_key.pop(row[key], [])
            assert not by_key, "tag rows without a news row"
        order = [c.name for c in dataset.columns]
        return sorted(({c: row[c] for c in order} for row in found), key=lambda r: str(r[key]))

    def test_environment_records_where_the_database_ran_and_both_ratios(
        self, target: dict[str, Any], tmp_path: Path
    ) -> None:
        host = {"pods": [{"name": "db-0", "node": "node-a", "role": "primary",
                          "memoryLimitBytes": 64 * 2**20, "cpuLimit": 1.5}],
                "memoryLimitBytes": 64 * 2**20, "cpuLimit": 1.5}  # fmt: skip
        config = self.step(target, "flat45", 200, {"type": "insert", "batchSize": 20},
                           databaseHost=host)  # fmt: skip
        assert run_step(config, tmp_path) == 0
        environment = json.loads((tmp_path / "environment.json").read_text())
        assert environment["database"] == host
        storage = json.loads((tmp_path / "summary.json").read_text())["storage"]
        used = storage["dataBytes"] + storage["indexBytes"]
        assert used > 0
        assert environment["dataToMemoryRatio"] == used / (64 * 2**20)
        cache = environment["server"]["cacheBytes"]
        assert cache > 0  # the buffer pool, read from the server
        assert environment["dataToCacheRatio"] == used / cache

    def test_environment_names_the_client_library(
        self, target: dict[str, Any], mysql_driver: str, tmp_path: Path
    ) -> None:
        self.load(target, "flat45", tmp_path, records=20)
        environment = json.loads((tmp_path / "environment.json").read_text())
        client = environment["runner"]["client"]
        assert client["driver"] == mysql_driver
        expected = "C client library" if mysql_driver == "mysqlclient" else ""
        assert client["implementation"].startswith(expected)
        assert client["version"]
