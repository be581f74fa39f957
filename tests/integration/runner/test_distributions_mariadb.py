"""Issue 16, item 1: a phase's `distribution` decides which keys reach the server.

A real MariaDB logs every statement (general log, to a table) while a phase
runs through the runner as a pod runs it (`run_step`: worker processes,
connections, the driver's SQL). The keys are read back from the server's log
and checked against what the server itself stores: hotspot touches only the
records whose keys sort in the lowest tenth of the table's order (the server's
own ORDER BY), zipfian reads follow Zipf's law (chi-square), latest favours the
newest records, and the same holds for a mix's reads and updates and a
query's Number values.
"""

from __future__ import annotations

import collections
import math
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dbbench_runner.running import run_step
from tests.fixtures.mariadb import MariaDBServer, start_mariadb
from tests.integration.runner.sql_contract import fetch_all as sql
from tests.support.runner_files import mariadb_target, step

pytestmark = pytest.mark.integration

# chi-square at p = 0.001 with 19 degrees of freedom (ranks 1..19 and the rest)
CHI2_19_999 = 43.82
# Small records load fast; recordSize does not apply to news and indexed4 keeps its fields.
SMALL = {"recordSize": 128}
WHERE_KEY = re.compile(r"WHERE `(\w+)` (?:=|>=) '?([^' ]+)'?")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MariaDBServer]:
    """A server that can log statements to mysql.general_log (off until a test asks)."""
    started = start_mariadb(
        tmp_path_factory.mktemp("mariadb-log"), extra_args=["--log-output=TABLE"]
    )
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture
def database(server: MariaDBServer) -> Iterator[str]:
    name = f"d_{uuid.uuid4().hex[:12]}"
    yield name
    sql(server, f"DROP DATABASE IF EXISTS `{name}`")


def load(server: MariaDBServer, database: str, shape: str, records: int, out: Path) -> None:
    target = mariadb_target(server, database)
    phase = {"type": "insert", "batchSize": 100, "reportEvery": records}
    assert run_step(step(target, shape, records, phase, table=SMALL), out) == 0


def logged(
    server: MariaDBServer,
    database: str,
    shape: str,
    records: int,
    phase: dict[str, Any],
    out: Path,
) -> list[str]:
    """Run the phase with the general log on; the statements the server received."""
    sql(server, "TRUNCATE TABLE mysql.general_log")
    sql(server, "SET GLOBAL general_log = ON")
    try:
        config = step(mariadb_target(server, database), shape, records, phase, table=SMALL)
        assert run_step(config, out) == 0
    finally:
        sql(server, "SET GLOBAL general_log = OFF")
    rows = sql(server, "SELECT argument FROM mysql.general_log WHERE command_type = 'Query'")
    return [r[0] if isinstance(r[0], str) else bytes(r[0]).decode() for r in rows]


def keys_of(statements: list[str], prefix: str) -> list[str]:
    """The key values of the statements starting with `prefix` (e.g. 'SELECT * FROM')."""
    found = []
    for statement in statements:
        if statement.startswith(prefix):
            match = WHERE_KEY.search(statement)
            assert match, statement
            found.append(match.group(2))
    return found


def key_order(server: MariaDBServer, database: str, table: str, column: str) -> dict[str, int]:
    """Each stored key's rank in the server's own order of the table's key."""
    rows = sql(server, f"SELECT `{column}` FROM `{table}` ORDER BY `{column}`", database)
    return {str(row[0]): rank for rank, row in enumerate(rows)}


@pytest.mark.parametrize(
    ("shape", "table", "column"),
    [("flat45", "flat45", "md5"), ("ycsb", "usertable", "YCSB_KEY"), ("news", "news", "ID")],
)
def test_hotspot_reads_only_the_lowest_tenth_of_the_table_order(
    server: MariaDBServer, database: str, tmp_path: Path, shape: str, table: str, column: str
) -> None:
    records = 20_000
    load(server, database, shape, records, tmp_path / "load")
    ranks = key_order(server, database, table, column)
    assert len(ranks) == records
    hot = {"type": "hotspot", "dataFraction": 0.1}
    reads = keys_of(
        logged(server, database, shape, records,
               {"type": "pointReads", "distribution": hot, "operations": 4000},
               tmp_path / "hot"),
        "SELECT * FROM",
    )  # fmt: skip
    assert len(reads) == 4000
    read_ranks = [ranks[k] for k in reads]
    # hashed keys: the key space's 10% quantile, so a few standard deviations of slack
    limit = 0.1 * records + 4 * math.sqrt(0.1 * records)
    assert max(read_ranks) < limit, f"read the record ranked {max(read_ranks)} of {records}"
    assert len(set(reads)) > 0.75 * 0.1 * records  # spread over the hot set, not a few keys
    # the same pointReads without a distribution: the whole table
    whole = keys_of(
        logged(server, database, shape, records,
               {"type": "pointReads", "keys": 4000, "operations": 4000}, tmp_path / "whole"),
        "SELECT * FROM",
    )  # fmt: skip
    assert sum(ranks[k] >= limit for k in whole) > 0.8 * len(whole)
    # a mix's reads, updates and scans start in the same hot range
    mix = logged(
        server, database, shape, records,
        {"type": "mix", "mix": {"read": 5, "update": 3, "scan": 1}, "distribution": hot,
         "operations": 1500},
        tmp_path / "mix",
    )  # fmt: skip
    touched = keys_of(mix, "SELECT * FROM") + keys_of(mix, "UPDATE")
    assert len(touched) == 1500
    assert max(ranks[k] for k in touched) < limit


def zipf_chi_square(ranks: list[int], n: int, theta: float = 0.99) -> float:
    """Ranks 0..18 and the rest against P(k) = (k+1)^-theta / zeta(n, theta)."""
    weights = [1.0 / (k**theta) for k in range(1, n + 1)]
    total = math.fsum(weights)
    counts = collections.Counter(ranks)
    observed = [counts[k] for k in range(19)] + [len(ranks) - sum(counts[k] for k in range(19))]
    expected = [len(ranks) * w / total for w in weights[:19]]
    expected.append(len(ranks) - math.fsum(expected))
    return sum((o - e) ** 2 / e for o, e in zip(observed, expected, strict=True))


def test_zipfian_and_latest_reads_follow_zipf_at_the_server(
    server: MariaDBServer, database: str, tmp_path: Path
) -> None:
    # The runner's documented rank -> record bijection (imported here: the other
    # tests of this module run on runners without it too).
    from dbbench_runner.distributions import scramble  # noqa: PLC0415

    records, reads = 5000, 12_000
    load(server, database, "news", records, tmp_path / "load")
    phase = {"type": "pointReads", "operations": reads}
    zipfian = keys_of(
        logged(server, database, "news", records, {**phase, "distribution": {"type": "zipfian"}},
               tmp_path / "zipfian"),
        "SELECT * FROM",
    )  # fmt: skip
    assert len(zipfian) == reads
    # The record of popularity rank k is scramble(k): translate what the server saw.
    rank_of = {scramble(records)(k): k for k in range(records)}
    assert zipf_chi_square([rank_of[int(k)] for k in zipfian], records) < CHI2_19_999
    top = collections.Counter(zipfian).most_common(1)[0][1]
    assert top > 50 * reads / records  # skewed: the hottest record far above uniform
    latest = keys_of(
        logged(server, database, "news", records, {**phase, "distribution": {"type": "latest"}},
               tmp_path / "latest"),
        "SELECT * FROM",
    )  # fmt: skip
    assert len(latest) == reads
    # the newest records (highest IDs) first: rank 0 is record `records`
    assert zipf_chi_square([records - int(k) for k in latest], records) < CHI2_19_999
    assert sum(int(k) > 0.9 * records for k in latest) > 0.6 * reads


def test_query_values_follow_the_distribution(
    server: MariaDBServer, database: str, tmp_path: Path
) -> None:
    load(server, database, "indexed4", 1000, tmp_path / "load")
    phase = {"type": "query", "queries": ["indexedEquality"], "operations": 1000,
             "distribution": {"type": "hotspot", "dataFraction": 0.1}}  # fmt: skip
    statements = logged(server, database, "indexed4", 1000, phase, tmp_path / "q")
    values = [int(v) for v in keys_of(statements, "SELECT * FROM `indexed4` WHERE `Number`")]
    assert len(values) == 1000
    assert max(values) < 52_560  # the first 10% of Number's 525,600 values
    assert len(set(values)) > 900
