"""dataset.source on real MySQL 9.7 and PostgreSQL 15: records read from files in
the vehicle-inspection data set's layout (tests/support/inspection_files.py)
are what the server stores, row for row; reads after the load find the keys
the files gave; bad input fails the step with its file and line, and nothing
is reported as a result."""

from __future__ import annotations

import csv
import gzip
import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from dbbench_runner.config import parse_config
from dbbench_runner.results import read_summary
from dbbench_runner.running import run_step
from tests.fixtures.mysql import MySQLServer
from tests.fixtures.postgres import PostgresServer
from tests.integration.runner.sql_contract import connect, rows
from tests.support.inspection_files import SEED, mapping, write_csv, write_jsonl
from tests.support.runner_files import cli

pytestmark = pytest.mark.integration

EXIT_BAD_SOURCE = 7


@dataclass
class Database:
    """One engine's fresh database: the step file's target and a query function."""

    engine: str
    target: dict[str, Any]
    query: Callable[[str], list[dict[str, Any]]]
    quote: str  # identifier quote


def _mysql(server: MySQLServer) -> Iterator[Database]:
    name = f"s_{uuid.uuid4().hex[:12]}"
    target = {"name": "mysql", "engine": "mysql", "host": "127.0.0.1", "port": server.port,
              "user": "root", "password": server.root_password, "database": name}  # fmt: skip
    yield Database("mysql", target, lambda sql: rows(server, name, sql), "`")
    conn = connect(server)
    try:
        conn.cursor().execute(f"DROP DATABASE IF EXISTS `{name}`")
    finally:
        conn.close()


def _postgres(server: PostgresServer) -> Iterator[Database]:
    name = f"s_{uuid.uuid4().hex[:12]}"
    target = {"name": "postgresql", "engine": "postgresql", "host": "127.0.0.1",
              "port": server.port, "user": server.user, "password": server.password,
              "database": name}  # fmt: skip

    def query(sql: str) -> list[dict[str, Any]]:
        args: Any = server.connect_args(name)
        with psycopg.connect(**args, row_factory=dict_row) as conn:
            return list(conn.execute(sql.encode()).fetchall())

    yield Database("postgresql", target, query, '"')
    with server.connect() as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["mysql", "postgresql"])
def database(request: pytest.FixtureRequest) -> Iterator[Database]:
    if request.param == "mysql":
        yield from _mysql(request.getfixturevalue("mysql_server"))
    else:
        yield from _postgres(request.getfixturevalue("postgres_server"))


def step(
    db: Database, root: Path, files: list[str], records: int, phase: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    """A step file loading (or, after the load, reading) the vehicle tests in `files`."""
    jsonl = ".jsonl" in files[0]
    fields = {**mapping()["fields"], **({"Items": "items"} if jsonl else {})}
    source = {"claimName": "mot", "files": files, "format": "jsonl" if jsonl else "csv",
              "key": "test_id", "fields": fields, "empty": [] if jsonl else ["Items"]}  # fmt: skip
    return {
        "target": db.target,
        "dataset": {
            "shape": "vehicle",
            "records": records,
            "seed": SEED,
            "source": source,
            "sourceRoot": str(root),
        },
        "phase": {"name": phase["type"].lower(), **phase},
        "threads": 2,
        "processes": 1,
        "progressEvery": 1,
        **extra,
    }


def run_pods(raw: dict[str, Any], out: Path, pods: int) -> int:
    """Each pod of the step in turn (as a Job's pods would, with their indexes);
    the records the pods' summaries count as written."""
    written = 0
    for pod in range(pods):
        config = parse_config({**raw, "pod": {"index": pod, "count": pods}})
        assert run_step(config, out / str(pod)) == 0
        written += read_summary(out / str(pod)).records
    return written


def file_rows(path: Path) -> dict[int, dict[str, Any]]:
    """The file's rows by test_id, as the test reads them (not through the runner)."""
    if path.name.endswith(".csv"):
        with path.open(newline="") as text:
            return {int(r["test_id"]): r for r in csv.DictReader(text)}
    with gzip.open(path, "rt") as lines:
        return {int(d["test_id"]): d for d in map(json.loads, lines)}


def stored(db: Database, keys: list[int]) -> dict[int, dict[str, Any]]:
    """Tests as the server holds them, lookup ids turned back into names."""
    q = db.quote
    listed = ", ".join(map(str, keys))
    found = db.query(
        f"SELECT t.{q}TestID{q} AS test_id, t.{q}VehicleID{q} AS vehicle_id, "
        f"t.{q}TestDate{q} AS test_date, t.{q}Mileage{q} AS test_mileage, "
        f"t.{q}CylinderCapacity{q} AS cylinder_capacity, "
        f"t.{q}FirstUseDate{q} AS first_use_date, md.{q}Name{q} AS model, "
        f"mk.{q}Name{q} AS make, co.{q}Name{q} AS colour, tr.{q}Name{q} AS test_result "
        f"FROM {q}vehicle_test{q} t "
        f"JOIN {q}model{q} md ON md.{q}ModelID{q} = t.{q}ModelID{q} "
        f"JOIN {q}make{q} mk ON mk.{q}MakeID{q} = md.{q}MakeID{q} "
        f"JOIN {q}colour{q} co ON co.{q}ColourID{q} = t.{q}ColourID{q} "
        f"JOIN {q}test_result{q} tr ON tr.{q}TestResultID{q} = t.{q}TestResultID{q} "
        f"WHERE t.{q}TestID{q} IN ({listed})"
    )
    return {int(r["test_id"]): r for r in found}


def count(db: Database, table: str) -> int:
    return int(db.query(f"SELECT COUNT(*) AS n FROM {db.quote}{table}{db.quote}")[0]["n"])


def assert_same(file_row: dict[str, Any], server_row: dict[str, Any]) -> None:
    for column, value in server_row.items():
        assert str(value) == str(file_row[column]), (column, file_row, server_row)


def test_a_csv_file_loads_exactly_and_reads_find_its_keys(
    database: Database, tmp_path: Path
) -> None:
    records = 240
    path = write_csv(tmp_path / "claim" / "mot" / "test_result_2021.csv", records)
    raw = step(database, tmp_path / "claim", ["mot/test_result_*.csv"], records,
               {"type": "insert", "batchSize": 7})  # fmt: skip
    # Two pods of two connections: rows i, i+4, ... each.
    assert run_pods(raw, tmp_path / "load", pods=2) == records
    assert count(database, "vehicle_test") == records
    assert count(database, "vehicle_test_item") == 0  # the test_result file has no items
    expected = file_rows(path)
    sample = [1, 2, 97, 150, records]
    at_server = stored(database, sample)
    assert sorted(at_server) == sample
    for key in sample:
        assert_same(expected[key], at_server[key])
    # Reads after the load draw the record numbers the files gave (1..records): every
    # read finds the latest test of a loaded test's vehicle (a miss counts as an error).
    reads = run_pods({**raw, "phase": {"name": "reads", "type": "pointReads",
                                       "operations": 200}}, tmp_path / "reads", pods=1)  # fmt: skip
    del reads
    summary = read_summary(tmp_path / "reads" / "0")
    assert (summary.operations, summary.errors) == (200, 0)


def test_a_gzipped_json_lines_file_loads_tests_and_items(
    database: Database, tmp_path: Path
) -> None:
    records = 150
    path = write_jsonl(tmp_path / "claim" / "tests.jsonl.gz", records)
    raw = step(database, tmp_path / "claim", ["tests.jsonl.gz"], records,
               {"type": "insert", "batchSize": 10})  # fmt: skip
    assert run_pods(raw, tmp_path / "load", pods=1) == records
    expected = file_rows(path)
    assert count(database, "vehicle_test") == records
    assert count(database, "vehicle_test_item") == sum(len(r["items"]) for r in expected.values())
    key = next(k for k, r in expected.items() if len(r["items"]) >= 2)
    q = database.quote
    items = database.query(
        f"SELECT i.{q}RfrID{q} AS rfr, ty.{q}Name{q} AS kind, lo.{q}Name{q} AS location "
        f"FROM {q}vehicle_test_item{q} i "
        f"JOIN {q}rfr_type{q} ty ON ty.{q}RfrTypeID{q} = i.{q}RfrTypeID{q} "
        f"JOIN {q}item_location{q} lo ON lo.{q}LocationID{q} = i.{q}LocationID{q} "
        f"WHERE i.{q}TestID{q} = {key} ORDER BY i.{q}Position{q}"
    )
    assert [(r["rfr"], r["kind"], r["location"]) for r in items] == [
        (i["RfrID"], i["Type"], i["Location"]) for i in expected[key]["items"]
    ]
    assert_same(expected[key], stored(database, [key])[key])


def test_a_pipe_delimited_gzipped_csv_loads(database: Database, tmp_path: Path) -> None:
    records = 40
    path = write_csv(tmp_path / "claim" / "t.csv.gz", records, delimiter="|")
    raw = step(database, tmp_path / "claim", ["t.csv.gz"], records, {"type": "insert"})
    raw["dataset"]["source"]["delimiter"] = "|"
    assert run_pods(raw, tmp_path / "load", pods=1) == records
    assert count(database, "vehicle_test") == records
    with gzip.open(path, "rt", newline="") as text:
        expected = {int(r["test_id"]): r for r in csv.DictReader(text, delimiter="|")}
    assert_same(expected[7], stored(database, [7])[7])


def _write_step(tmp_path: Path, raw: dict[str, Any]) -> Path:
    path = tmp_path / "step.json"
    path.write_text(json.dumps(raw))
    return path


def test_a_broken_row_fails_the_step_with_its_line_and_nothing_is_reported(
    database: Database, tmp_path: Path
) -> None:
    path = write_csv(tmp_path / "claim" / "t.csv", 120)
    lines = path.read_text().splitlines(keepends=True)
    values = lines[86].split(",")
    values[6] = "12O45"  # a letter O in the mileage, on line 87
    lines[86] = ",".join(values)
    path.write_text("".join(lines))
    raw = step(database, tmp_path / "claim", ["t.csv"], 120, {"type": "insert", "batchSize": 5})
    result = cli("run", "--config", str(_write_step(tmp_path, raw)), "--out", str(tmp_path / "o"))
    assert result.returncode == EXIT_BAD_SOURCE, result.stderr
    assert (
        "error: dataset.source: t.csv line 87: Mileage (column test_mileage): '12O45' is not "
        "an integer"
    ) in result.stderr
    assert not (tmp_path / "o" / "summary.json").exists()


def test_a_missing_file_fails_before_the_database_is_touched(
    database: Database, tmp_path: Path
) -> None:
    write_csv(tmp_path / "claim" / "a.csv", 10)
    raw = step(database, tmp_path / "claim", ["a.csv", "b.csv"], 10, {"type": "insert"})
    result = cli("run", "--config", str(_write_step(tmp_path, raw)), "--out", str(tmp_path / "o"))
    assert result.returncode == EXIT_BAD_SOURCE, result.stderr
    assert "error: dataset.source: b.csv: no such file on the claim mot" in result.stderr
    assert not (tmp_path / "o" / "summary.json").exists()
    with pytest.raises(Exception, match=r"(?i)unknown database|does not exist"):
        count(database, "vehicle_test")


@pytest.mark.parametrize(("first", "again"), [(12, 31), (12, 14)], ids=["batches", "one-batch"])
def test_a_key_column_with_duplicates_is_refused_at_the_repeat(
    database: Database, tmp_path: Path, first: int, again: int
) -> None:
    """Line `again` repeats line `first`'s test_id; batches of 5 (lines 2-6, 7-11, ...)
    put them in different batches, or in one."""
    path = write_csv(tmp_path / "claim" / "t.csv", 60)
    lines = path.read_text().splitlines(keepends=True)
    key = lines[first - 1].split(",")[0]
    values = lines[again - 1].split(",")
    values[0] = key
    lines[again - 1] = ",".join(values)
    path.write_text("".join(lines))
    raw = step(database, tmp_path / "claim", ["t.csv"], 60, {"type": "insert", "batchSize": 5},
               threads=1)  # fmt: skip
    result = cli("run", "--config", str(_write_step(tmp_path, raw)), "--out", str(tmp_path / "o"))
    assert result.returncode == EXIT_BAD_SOURCE, result.stderr
    assert (
        f"error: dataset.source: t.csv line {again}: key TestID {key} is already loaded: the "
        "key column holds it twice (the database refused this row: "
    ) in result.stderr
    assert not (tmp_path / "o" / "summary.json").exists()


def test_a_row_count_other_than_records_fails_once_after_the_load(
    database: Database, tmp_path: Path
) -> None:
    """Every connection (2 processes x 2) counts the files' rows and finds 50, not 60:
    the step fails saying so once, and reports nothing."""
    write_csv(tmp_path / "claim" / "t.csv", 50)
    raw = step(database, tmp_path / "claim", ["t.csv"], 60, {"type": "insert", "batchSize": 5},
               threads=4, processes=2)  # fmt: skip
    result = cli("run", "--config", str(_write_step(tmp_path, raw)), "--out", str(tmp_path / "o"))
    assert result.returncode == EXIT_BAD_SOURCE, result.stderr
    message = (
        "dataset.source: claim mot: the files hold 50 records, dataset.records is 60: "
        "set dataset.records: 50"
    )
    assert f"error: {message}\n" in result.stderr
    assert result.stderr.count(message) == 1
    assert not (tmp_path / "o" / "summary.json").exists()
