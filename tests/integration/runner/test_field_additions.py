"""What the field benchmarks needed and the API lacked, against a real MariaDB:
read-modify-write (YCSB F) and news with and without the Tags index."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from dbbench_runner.config import ConfigError, parse_config
from dbbench_runner.datasets import generator_for
from dbbench_runner.running import run_step
from tests.fixtures.mariadb import MariaDBServer
from tests.integration.runner.sql_contract import connect, rows
from tests.support.runner_files import check_results, mariadb_target, step

pytestmark = pytest.mark.integration


@pytest.fixture
def database(mariadb: MariaDBServer) -> Iterator[str]:
    name = f"f_{uuid.uuid4().hex[:12]}"
    yield name
    conn = connect(mariadb)
    try:
        conn.cursor().execute(f"DROP DATABASE IF EXISTS `{name}`")
    finally:
        conn.close()


def test_read_modify_write_reads_then_updates(
    mariadb: MariaDBServer, database: str, tmp_path: Path
) -> None:
    target = mariadb_target(mariadb, database)
    assert run_step(step(target, "ycsb", 300, {"type": "insert"}), tmp_path / "load") == 0
    phase = {"type": "mix", "mix": {"read": 50, "readModifyWrite": 50}, "operations": 400,
             "reportEvery": 100, "distribution": {"type": "zipfian"}}  # fmt: skip
    config = step(target, "ycsb", 300, phase)
    assert run_step(config, tmp_path / "f") == 0
    summary = check_results(tmp_path / "f", operations=400)
    by_type = summary["operationsByType"]
    assert set(by_type) == {"read", "readModifyWrite"}
    assert summary["errors"] == 0
    rmw = by_type["readModifyWrite"]
    assert rmw["operations"] > 100
    # Each read-modify-write updates its row. MySQL counts *changed* rows, and two
    # connections can write the same values (same version) to a hot zipfian key,
    # so a few may report 0 rows.
    assert 0.9 * rmw["operations"] <= rmw["rows"] <= rmw["operations"]
    generator = generator_for(config.dataset)
    stored = rows(mariadb, database, "SELECT * FROM usertable")
    original = {generator.key(n): generator.record(n) for n in range(1, 301)}
    changed = [r for r in stored if any(r[k] != v for k, v in original[r["YCSB_KEY"]].items())]
    assert changed, "no record was modified"


@pytest.mark.parametrize("tags_index", [True, False])
def test_news_with_and_without_the_tags_index(
    mariadb: MariaDBServer, database: str, tmp_path: Path, tags_index: bool
) -> None:
    target = mariadb_target(mariadb, database)
    dataset = {"shape": "news", "records": 200, "seed": 7, "tagsIndex": tags_index}
    config = step(target, "news", 200, {"type": "insert"}, dataset=dataset)
    assert run_step(config, tmp_path / "load") == 0
    indexed = rows(mariadb, database, (
        "SELECT COLUMN_NAME FROM information_schema.STATISTICS "
        f"WHERE TABLE_SCHEMA = '{database}' AND TABLE_NAME = 'news_tags'"
    ))  # fmt: skip
    assert ("tag" in {r["COLUMN_NAME"] for r in indexed}) is tags_index
    tags = rows(mariadb, database, "SELECT COUNT(*) AS n FROM news_tags")[0]["n"]
    assert tags >= 2 * 200  # the Tags are stored either way


def test_tags_index_is_refused_outside_news() -> None:
    raw = {"target": {"name": "t", "engine": "mariadb", "host": "h"},
           "dataset": {"shape": "ycsb", "records": 10, "tagsIndex": False},
           "phase": {"name": "p", "type": "insert"}}  # fmt: skip
    with pytest.raises(ConfigError, match=r"dataset\.tagsIndex: only the news shape has Tags"):
        parse_config(raw)
