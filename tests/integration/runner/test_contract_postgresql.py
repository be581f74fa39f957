"""The driver contract with `engine: postgresql` against a real PostgreSQL (Debian's 15).

The shared contract (every shape and idMode, inserts single and batched,
mix with scans, queries, point reads, two pods, pacing, vehicle) plus what
is PostgreSQL's own: tables and indexes as declared, the tagsIndex toggle,
a batch beyond the protocol's 65,535 parameters, storage samples against the
server's own size functions, the settings in force, reads routed to a
replica. The fixture fails, never skips, when the server binaries are missing.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import psycopg
import pytest
from psycopg.rows import dict_row

from dbbench_runner.datasets import DatasetGenerator, generator_for
from dbbench_runner.datasets.vehicle import Vehicle
from dbbench_runner.running import run_step
from dbbench_runner.schema import postgresql_vehicle
from dbbench_runner.schema import sql as schema
from tests.fixtures.postgres import PostgresServer
from tests.integration.runner.driver_contract import DriverContract
from tests.integration.runner.vehicle_contract import VehicleSqlContract
from tests.support.runner_files import check_results, csv_rows

pytestmark = pytest.mark.integration


def pg_target(server: PostgresServer, database: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": "postgresql",
        "engine": "postgresql",
        "host": "127.0.0.1",
        "port": server.port,
        "user": server.user,
        "password": server.password,
        "database": database,
        **extra,
    }


def pg_rows(
    server: PostgresServer, database: str, statement: str, *params: object
) -> list[dict[str, Any]]:
    with psycopg.connect(**server.connect_args(database), row_factory=dict_row) as conn:  # type: ignore[arg-type]
        return list(conn.execute(statement, params).fetchall())


def drop_database(server: PostgresServer, database: str) -> None:
    with server.connect() as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


class TestPostgresContract(DriverContract, VehicleSqlContract):
    engine: ClassVar[str] = "postgresql"
    # pg_stat_database's blocks read outside shared_buffers (backends flush their
    # counts about once a second, so the last second of a phase may fall after it).
    disk_reads_counter: ClassVar[str | None] = "blks_read"

    @pytest.fixture(autouse=True)
    def _server(self, postgres_server: PostgresServer) -> None:
        self.server = postgres_server

    @pytest.fixture
    def target(self, postgres_server: PostgresServer) -> Iterator[dict[str, Any]]:
        database = f"c_{uuid.uuid4().hex[:12]}"
        yield pg_target(postgres_server, database)
        drop_database(postgres_server, database)

    @pytest.fixture(params=[{"batchSize": 1}, {"batchSize": 25}], ids=["single", "batch25"])
    def insert_variant(self, request: pytest.FixtureRequest) -> dict[str, Any]:
        return dict(request.param)

    def drop_database(self, target: dict[str, Any]) -> None:
        drop_database(self.server, target["database"])

    def sql(self, target: dict[str, Any], statement: str, *params: object) -> list[dict[str, Any]]:
        return pg_rows(self.server, target["database"], statement, *params)

    def q(self, name: str) -> str:
        return f'"{name}"'

    def table_names(self, target: dict[str, Any]) -> list[str]:
        rows = self.sql(target, "SELECT tablename AS t FROM pg_tables WHERE schemaname = 'public'")
        return [r["t"] for r in rows]

    def read_statement(self, generator: Vehicle) -> str:
        return postgresql_vehicle.read_statement(generator)

    def vehicle_indexes(self, target: dict[str, Any], table: str) -> set[str]:
        rows = self.sql(target, "SELECT indexname AS i FROM pg_indexes WHERE tablename = %s",
                        table)  # fmt: skip
        return {r["i"] for r in rows}

    def expected_vehicle_indexes(self, id_mode: str) -> set[str]:
        table = {"client": "vehicle_test", "server": "vehicle_test_serverkey"}[id_mode]
        primary = {"client": f"{table}_pkey", "server": f"{table}_ix_TestID"}[id_mode]
        return {primary, f"{table}_ix_VehicleID_TestDate"}

    def key_indexed(self, target: dict[str, Any], dataset: DatasetGenerator) -> bool:
        found = self.sql(target, "SELECT indexdef AS d FROM pg_indexes WHERE tablename = %s",
                         dataset.table)  # fmt: skip
        return any(f"({dataset.key_column})" in r["d"] for r in found)

    def keyed_by(self, target: dict[str, Any], dataset: DatasetGenerator) -> str:
        found = self.sql(
            target,
            "SELECT a.attname AS c FROM pg_index i JOIN pg_attribute a "
            "ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) "
            "WHERE i.indrelid = %s::regclass AND i.indisprimary",
            f'"{dataset.table}"',
        )  # fmt: skip
        if [r["c"] for r in found] == [dataset.key_column]:
            return "record key"
        return "server" if not found else f"primary key {found}"

    def stored(
        self, target: dict[str, Any], dataset: DatasetGenerator, id_mode: str
    ) -> list[dict[str, Any]]:
        del id_mode  # the key column is stored either way
        key = dataset.key_column
        found = self.sql(target, f'SELECT * FROM "{dataset.table}" ORDER BY "{key}"')
        tags = schema.tags_column(dataset)
        if tags is not None:
            by_key: dict[Any, list[str]] = {}
            table = schema.tags_table(dataset)
            for row in self.sql(target, f'SELECT * FROM "{table}" ORDER BY "{key}", position'):
                by_key.setdefault(row[key], []).append(row["tag"])
            for row in found:
                row[tags.name] = by_key.pop(row[key], [])
            assert not by_key, "tag rows without a news row"
        order = [c.name for c in dataset.columns]
        return sorted(({c: row[c] for c in order} for row in found), key=lambda r: str(r[key]))

    def indexes(self, target: dict[str, Any], table: str) -> dict[str, str]:
        rows = self.sql(target, "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s",
                        table)  # fmt: skip
        return {r["indexname"]: r["indexdef"] for r in rows}

    @pytest.mark.parametrize("id_mode", ["client", "server"])
    def test_keys_and_indexes_as_declared(
        self, target: dict[str, Any], id_mode: str, tmp_path: Path
    ) -> None:
        for shape in ("flat45", "indexed4", "ycsb"):
            self.load(target, shape, tmp_path / shape, id_mode=id_mode, records=40)
        # Server-keyed records live in <table>_serverkey (docs/api.md).
        suffix = "" if id_mode == "client" else "_serverkey"
        flat45 = self.indexes(target, f"flat45{suffix}")
        indexed4 = self.indexes(target, f"indexed4{suffix}")
        if id_mode == "client":
            assert set(flat45) == {"flat45_pkey"}  # benchmark 1's case d: no other index
            assert "PRIMARY KEY" not in str(flat45)
            assert "(md5)" in flat45["flat45_pkey"]
            assert set(indexed4) == {"indexed4_pkey", "indexed4_ix_Number", "indexed4_ix_Number1",
                                     "indexed4_ix_Date"}  # fmt: skip
        else:
            assert flat45 == {}  # no primary key, and the md5 column is not indexed
            assert "indexed4_serverkey_ix_id" in indexed4
            assert "indexed4_serverkey_pkey" not in indexed4
        assert '"Date" DESC' in indexed4[f"indexed4{suffix}_ix_Date"]

    @pytest.mark.parametrize("tags_index", [True, False])
    def test_news_tags_index_toggle(
        self, target: dict[str, Any], tags_index: bool, tmp_path: Path
    ) -> None:
        config = self.step(target, "news", 60, {"type": "insert", "batchSize": 10},
                           table={"tagsIndex": tags_index})  # fmt: skip
        assert run_step(config, tmp_path) == 0
        assert ("news_tags_ix_tag" in self.indexes(target, "news_tags")) is tags_index
        assert set(self.indexes(target, "news")) == {
            "news_pkey",
            "news_ix_CategoryID",
            "news_ix_CreateTime",
            "news_ix_UserID",
        }
        tag_rows = self.sql(target, "SELECT COUNT(*) AS n FROM news_tags")[0]["n"]
        generator = generator_for(config.dataset)
        assert tag_rows == sum(len(generator.record(n)["Tags"]) for n in range(1, 61))

    def test_a_batch_beyond_the_parameter_limit(
        self, target: dict[str, Any], tmp_path: Path
    ) -> None:
        # 2 connections x one batch of 1,500 flat45 rows x 45 columns = 67,500 parameters.
        records = 3_000
        config = self.step(target, "flat45", records, {"type": "insert", "batchSize": 1500})
        assert len(schema.plain_columns(generator_for(config.dataset))) * 1500 > 65_535
        assert run_step(config, tmp_path) == 0
        summary = check_results(tmp_path, operations=2, records=records)
        assert summary["errors"] == 0
        generator = generator_for(config.dataset)
        assert self.stored(target, generator, "client") == self.expected(
            config, range(1, records + 1)
        )

    def test_read_modify_write_reads_then_updates(
        self, target: dict[str, Any], tmp_path: Path
    ) -> None:
        self.load(target, "ycsb", tmp_path / "load", records=300)
        phase = {"type": "mix", "mix": {"read": 50, "readModifyWrite": 50}, "operations": 400,
                 "reportEvery": 100, "distribution": {"type": "zipfian"}}  # fmt: skip
        config = self.step(target, "ycsb", 300, phase)
        assert run_step(config, tmp_path / "f") == 0
        summary = check_results(tmp_path / "f", operations=400)
        rmw = summary["operationsByType"]["readModifyWrite"]
        assert summary["errors"] == 0
        assert rmw["operations"] > 100
        # PostgreSQL counts the rows an UPDATE matched (MySQL: the rows it changed).
        assert rmw["rows"] == rmw["operations"]
        generator = generator_for(config.dataset)
        original = {generator.key(n): generator.record(n) for n in range(1, 301)}
        stored = self.sql(target, "SELECT * FROM usertable")
        assert len(stored) == 300
        assert any(any(r[k] != v for k, v in original[r["YCSB_KEY"]].items()) for r in stored)

    def test_a_failed_transaction_is_rolled_back_and_named(
        self, target: dict[str, Any], tmp_path: Path
    ) -> None:
        # news rows and their tags in one transaction: records 11..20 exist already,
        # so their news row fails (UniqueViolation) and nothing of them is written;
        # the same connections then write 21..30.
        self.load(target, "news", tmp_path / "first", records=20)
        phase = {"type": "insert", "maxErrorRate": 1}
        again = self.step(target, "news", 20, phase, table={"firstRecord": 11})
        assert run_step(again, tmp_path / "again") == 0
        summary = json.loads((tmp_path / "again" / "summary.json").read_text())
        assert summary["errorsByType"] == {"insert:UniqueViolation(23505)": 10}
        assert summary["records"] == 10
        generator = generator_for(again.dataset)
        assert self.stored(target, generator, "client") == self.expected(again, range(1, 31))

    def test_storage_samples_are_the_servers_sizes(
        self, target: dict[str, Any], tmp_path: Path
    ) -> None:
        self.load(target, "news", tmp_path, records=200)
        samples = csv_rows(tmp_path / "storage.csv")
        last = samples[-1]
        sizes = self.sql(
            target,
            "SELECT SUM(pg_table_size(c.oid))::bigint AS data, "
            "SUM(pg_indexes_size(c.oid))::bigint AS idx, "
            "SUM(pg_total_relation_size(c.oid))::bigint AS total FROM pg_class c "
            "WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r'",
        )[0]
        # Nothing wrote after the last sample: the runner's figures are the server's own.
        assert int(last["dataBytes"]) == sizes["data"] > 0
        assert int(last["indexBytes"]) == sizes["idx"] > 0
        assert int(last["storageBytes"]) == sizes["total"] == sizes["data"] + sizes["idx"]
        assert int(last["records"]) == 200  # counted by the runner, exact
        assert int(samples[0]["records"]) == 0

    def test_server_version_and_settings_in_force(
        self, target: dict[str, Any], tmp_path: Path
    ) -> None:
        self.load(target, "flat45", tmp_path, records=20)
        environment = json.loads((tmp_path / "environment.json").read_text())
        server = environment["server"]
        shown = pg_rows(self.server, "postgres", "SELECT current_setting('server_version') AS v, "
                        "pg_size_bytes(current_setting('shared_buffers')) AS b, "
                        "version() AS full")[0]  # fmt: skip
        assert shown["full"].startswith("PostgreSQL ")  # guard: the server is PostgreSQL
        assert server["version"] == shown["v"]
        assert server["cacheBytes"] == shown["b"]
        for name in ("shared_buffers", "synchronous_commit", "fsync", "wal_level"):
            assert name in server["settings"], name
        assert server["settings"]["synchronous_commit"] == "on"
        client = environment["runner"]["client"]
        assert client["driver"] == "psycopg"
        assert client["implementation"].split()[0] in ("c", "binary")


def test_reads_go_to_the_replica_only_when_allowed(
    postgres_server: PostgresServer, postgres_factory: Any, tmp_path: Path
) -> None:
    # Two unrelated servers: the "replica" holds the records, the primary an empty
    # table. Reads find rows only if they really went to the replica.
    (replica,) = postgres_factory()
    with replica.connect() as conn:
        conn.execute(f"ALTER ROLE postgres PASSWORD '{postgres_server.password}'")
    replica.password = postgres_server.password
    database = f"r_{uuid.uuid4().hex[:12]}"
    load = {"type": "insert", "batchSize": 10}
    from tests.support.runner_files import step  # noqa: PLC0415

    assert run_step(step(pg_target(replica, database), "ycsb", 100, load), tmp_path / "load") == 0
    routed = pg_target(postgres_server, database, replicas=[{"host": "127.0.0.1",
                                                             "port": replica.port}])  # fmt: skip
    try:
        for preference, found in (("secondaryPreferred", 60), ("primary", 0)):
            # Reads of the primary's empty table find nothing: errors (not found),
            # counted; the limit is lifted to see where the reads went.
            phase = {"type": "mix", "mix": {"read": 1}, "operations": 60,
                     "readPreference": preference, "maxErrorRate": 1.0}  # fmt: skip
            out = tmp_path / preference
            assert run_step(step(routed, "ycsb", 100, phase), out) == 0
            summary = check_results(out, operations=60)
            read = summary["operationsByType"]["read"]
            assert (read["rows"], read["found"], read["notFound"]) == (
                found, found, 60 - found), preference  # fmt: skip
    finally:
        drop_database(postgres_server, database)
