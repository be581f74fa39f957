"""Storage samples follow a growing table on MySQL 9.7 and on MariaDB.

MySQL 8 and later answer information_schema.TABLES' sizes and row estimates
from a cache they keep `information_schema_stats_expiry` seconds (24 hours by
default): the runner's storage samples read that cache, so on MySQL a table
first sampled empty kept its 16 KB and 0 rows for the whole run (benchmark 1's
and 4's MySQL rows in docs/reproductions.md). The runner now turns the cache
off for the session that samples storage, where the server has it (MariaDB
does not, and reads the figures live).

Two loads into one table, each step sampled by the runner, then a third step
once InnoDB has counted the table's pages again. What InnoDB reports has two
speeds, on both servers: the row estimate and the free space follow every
insert, while the data and index sizes are the page counts of InnoDB's last
statistics recalculation, which its background thread makes once a tenth of
the table changed (at most every 10 seconds a table). So the second step's
closing sample must count more rows than the first's; its sizes may still
lag, and the third step's samples, taken after the server's own live figures
grew, must show the new sizes.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from dbbench_runner.running import run_step
from tests.integration.runner.sql_contract import SqlServer, connect, fetch_all
from tests.support.runner_files import csv_rows, step

pytestmark = pytest.mark.integration

FIRST = 100  # records of the first load
MORE = 5000  # records of the second (about 2.5 MB of payload)
SHAPE = {"recordSize": 500}
RECALC_TIMEOUT_S = 90.0


@dataclass(frozen=True)
class Table:
    engine: str
    server: SqlServer
    database: str

    def target(self) -> dict[str, Any]:
        """The runner's target for this table's database."""
        return {
            "name": self.engine, "engine": self.engine, "host": "127.0.0.1",
            "port": self.server.port, "user": "root", "password": self.server.root_password,
            "database": self.database,
        }  # fmt: skip


@pytest.fixture(params=["mysql", "mariadb"])
def table(request: pytest.FixtureRequest) -> Iterator[Table]:
    engine = str(request.param)
    server: SqlServer = request.getfixturevalue("mysql_server" if engine == "mysql" else "mariadb")
    table = Table(engine, server, f"g_{uuid.uuid4().hex[:12]}")
    yield table
    fetch_all(server, f"DROP DATABASE IF EXISTS `{table.database}`")


def load(table: Table, first: int, records: int, out: Path) -> dict[str, str]:
    """Insert records first..first+records-1 with the runner; its closing storage sample."""
    config = step(
        table.target(), "ycsb", records, {"type": "insert", "batchSize": 50},
        table={**SHAPE, "firstRecord": first, "recordsBefore": first - 1},
    )  # fmt: skip
    assert run_step(config, out) == 0
    return csv_rows(out / "storage.csv")[-1]


def live_data_bytes(table: Table) -> int:
    """The table's data size as the server says it now, MySQL's cache bypassed."""
    conn = connect(table.server)
    try:
        cursor = conn.cursor()
        if table.engine == "mysql":
            cursor.execute("SET SESSION information_schema_stats_expiry = 0")
        cursor.execute(
            "SELECT data_length FROM information_schema.tables "
            "WHERE table_schema = %s AND table_name = 'usertable'",
            (table.database,),
        )
        return int(cursor.fetchall()[0][0])
    finally:
        conn.close()


def test_storage_samples_grow_with_the_table(table: Table, tmp_path: Path) -> None:
    first = load(table, 1, FIRST, tmp_path / "first")
    # The first step's own rows are counted: the runner's first sample (empty table)
    # no longer fixes what MySQL answers.
    assert int(first["engineEstimatedRecords"]) > 0, first
    second = load(table, FIRST + 1, MORE, tmp_path / "second")
    assert int(second["records"]) == FIRST + MORE  # the runner's own count
    assert int(second["engineEstimatedRecords"]) > int(first["engineEstimatedRecords"]), (
        first, second,
    )  # fmt: skip
    # InnoDB counts the pages again in the background; wait until the server's own
    # figure shows the growth, then the runner's next samples must show it too.
    limit = time.monotonic() + RECALC_TIMEOUT_S
    while (live := live_data_bytes(table)) <= int(first["dataBytes"]):
        assert time.monotonic() < limit, f"InnoDB never recounted: {live} bytes"
        time.sleep(0.5)
    third = load(table, FIRST + MORE + 1, 10, tmp_path / "third")
    assert int(third["dataBytes"]) >= live > int(first["dataBytes"]), (first, third)
    assert int(third["storageBytes"]) > int(first["storageBytes"]), (first, third)
