"""BenchmarkRun fields as a real MySQL 9.7 sees them (its performance_schema).

Step files are built from a spec by the operator's own builder
(`build_step_config`), pointed at the fixture's server, and run by the runner
as a pod runs it (`python -m dbbench_runner run`: worker processes,
connections, the chosen client library). The server then says what happened:
its live sessions (performance_schema.threads and session_connect_attrs: the
client library and the client process of each connection), the statements
it ran (per digest and schema, counted as `statements` says), and the rows it
stores. docs/fields.md names these tests for the fields they observe.
"""

from __future__ import annotations

import collections
import concurrent.futures
import json
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import MySQLdb
import pytest
import yaml

from dbbench_contract.api import BenchmarkRunSpec, parse_spec
from dbbench_operator.naming import RunRef
from dbbench_operator.specs.addresses import target_access
from dbbench_operator.specs.plan import plan
from dbbench_operator.specs.runner_job import build_step_config
from dbbench_runner.config import Dataset
from dbbench_runner.datasets import generator_for
from tests.fixtures.mysql import MySQLServer
from tests.integration.runner.sql_contract import connect

pytestmark = pytest.mark.integration

RUN = RunRef(name="at-server", namespace="team-a", uid="77-uid", generation=1)
# What each client library calls itself in its connection attributes.
CLIENT_NAMES = {"mysqlclient": "libmariadb", "mysql-connector-python": "mysql-connector-python"}


def query(
    server: MySQLServer, statement: str, *params: object, conn: Any = None
) -> list[dict[str, Any]]:
    """Rows of `statement`, on `conn` or on a connection of its own."""
    own = conn is None
    conn = connect(server) if own else conn
    try:
        cursor = conn.cursor(dictionary=True)
        cursor.execute(statement, params)
        return list(cursor.fetchall())
    finally:
        if own:
            conn.close()


@pytest.fixture
def database(mysql_server: MySQLServer) -> Iterator[str]:
    name = f"s_{uuid.uuid4().hex[:12]}"
    yield name
    query(mysql_server, f"DROP DATABASE IF EXISTS `{name}`")


def run_spec(**fields: Any) -> BenchmarkRunSpec:
    return parse_spec({"targets": [{"name": "my", "engine": "mysql"}], **fields})


def step_file(
    spec: BenchmarkRunSpec, phase: str, server: MySQLServer, database: str, path: Path
) -> Path:
    """The operator's step file for `phase`, its target pointed at the fixture server."""
    step = next(s for s in plan(spec) if s.phase == phase)
    wire = build_step_config(spec, step, target_access(RUN, spec, 0)).to_wire()
    wire["target"] = {
        "name": "my", "engine": "mysql", "host": "127.0.0.1", "port": server.port,
        "user": "root", "password": server.root_password, "database": database,
    }  # fmt: skip
    wire["pod"] = {**wire["pod"], "index": 0}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(wire))
    return path


def runner(config: Path, out: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "dbbench_runner", "run", "--config", str(config), "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def finish(process: subprocess.Popen[str], timeout: float = 120) -> None:
    try:
        _, stderr = process.communicate(timeout=timeout)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, stderr


def run_phase(spec: BenchmarkRunSpec, phase: str, server: MySQLServer, database: str,
              tmp: Path) -> dict[str, Any]:  # fmt: skip
    """Run one phase to its end, the server's side of it included; its summary.json."""
    config = step_file(spec, phase, server, database, tmp / f"{phase}.yaml")
    finish(runner(config, tmp / phase))
    sessions_ended(server, database)
    return dict(json.loads((tmp / phase / "summary.json").read_text()))


def sessions_ended(
    server: MySQLServer, database: str, timeout: float = 60, conn: Any = None
) -> None:
    """Wait until the server has ended every session on `database`.

    MySQL sends a statement's result before it adds the statement to
    performance_schema's digest summary (dispatch_command: the response, then
    the statement's end event), so a runner can have every answer and exit
    while the digest table still lacks its last statements. A session ends
    only after its last statement is accounted for; a loop of single SELECTs
    read right after the client closed found the digest one short in 132 of
    2,000 tries, and exact in 2,000 of 2,000 once the session was gone.
    """
    limit = time.monotonic() + timeout
    while live := query(
        server,
        "SELECT PROCESSLIST_ID AS id FROM performance_schema.threads WHERE PROCESSLIST_DB = %s",
        database,
        conn=conn,
    ):
        assert time.monotonic() < limit, f"sessions still open on {database}: {live}"
        time.sleep(0.05)


def sessions(server: MySQLServer, database: str) -> dict[int, dict[str, str]]:
    """The server's live sessions on `database`: {connection id: {_pid, _client_name}}."""
    rows = query(
        server,
        "SELECT t.PROCESSLIST_ID AS id, a.ATTR_NAME AS name, a.ATTR_VALUE AS value "
        "FROM performance_schema.threads t JOIN performance_schema.session_connect_attrs a "
        "ON a.PROCESSLIST_ID = t.PROCESSLIST_ID "
        "WHERE t.PROCESSLIST_DB = %s AND a.ATTR_NAME IN ('_pid', '_client_name')",
        database,
    )
    found: dict[int, dict[str, str]] = collections.defaultdict(dict)
    for row in rows:
        found[int(row["id"])][str(row["name"])] = str(row["value"])
    return dict(found)


def busiest_sessions(
    process: subprocess.Popen[str], server: MySQLServer, database: str
) -> dict[int, dict[str, str]]:
    """The most sessions seen on `database` while the runner process ran."""
    most: dict[int, dict[str, str]] = {}
    while process.poll() is None:
        seen = sessions(server, database)
        if len(seen) > len(most):
            most = seen
        time.sleep(0.2)
    return most


def statements(server: MySQLServer, database: str, conn: Any = None) -> collections.Counter[str]:
    """Statements the server ran in `database`, by digest text (read once the
    sessions ended: sessions_ended).

    Counted from the digest's latency histogram (events_statements_histogram_
    by_digest, every bucket summed), not from the digest summary's COUNT_STAR.
    Both are added to by each session's thread as its statement ends, with no
    lock (pfs_end_statement_vc), but a histogram bucket is a std::atomic and
    COUNT_STAR a plain `m_count++` (PFS_single_stat): when two sessions end a
    statement of the same digest at once, one increment of COUNT_STAR can be
    lost. So the mix test once found 1,082 point SELECTs where the runner had
    run 1,083 reads and read-modify-writes, every other type exact and no error
    anywhere: reproduced under CPU load in 1 run of 40 (runner 1,083,
    COUNT_STAR 1,082, histogram 1,083), and with two clients of 3,000
    identical SELECTs each COUNT_STAR came out 1 to 4 short in 3 of 10 rounds
    while the histogram and the per-user count were exact every time. Timed
    statements only (the histogram is of latencies): every statement
    instrument is timed by default. A full digest table would send new
    digests to its NULL-schema row, which no schema's count sees: refused.
    """
    lost = query(server, "SHOW GLOBAL STATUS LIKE 'Performance_schema_digest_lost'", conn=conn)
    assert lost[0]["Value"] == "0", f"the digest table is full, counts would be lost: {lost}"
    rows = query(
        server,
        "SELECT s.DIGEST_TEXT AS text, SUM(h.COUNT_BUCKET) AS n "
        "FROM performance_schema.events_statements_summary_by_digest s "
        "JOIN performance_schema.events_statements_histogram_by_digest h "
        "ON h.SCHEMA_NAME = s.SCHEMA_NAME AND h.DIGEST = s.DIGEST "
        "WHERE s.SCHEMA_NAME = %s GROUP BY s.DIGEST, s.DIGEST_TEXT",
        database,
        conn=conn,
    )
    return collections.Counter({str(r["text"]): int(r["n"]) for r in rows})


def count_of(ran: collections.Counter[str], pattern: str) -> int:
    return sum(n for text, n in ran.items() if re.match(pattern, text))


@pytest.mark.parametrize("driver", ["mysqlclient", "mysql-connector-python"])
def test_threads_processes_and_client_library_are_the_servers_sessions(
    mysql_server: MySQLServer, database: str, driver: str, tmp_path: Path
) -> None:
    """runner.threads connections from runner.processes client processes, each made by
    runner.mysqlDriver's library; a phase's own `threads` replaces runner.threads.
    (3 processes: unset, this 2-core machine would get 2, one per CPU.)"""
    reads = {"type": "mix", "mix": {"read": 1}, "duration": "3s", "targetRate": 60}
    spec = run_spec(
        runner={"threads": 3, "processes": 3, "mysqlDriver": driver},
        dataset={"shape": "flat45", "records": 200, "recordSize": 256},
        phases=[{"name": "load", "type": "insert", "batchSize": 20},
                {"name": "reads", **reads}, {"name": "more", **reads, "threads": 6}],
    )  # fmt: skip
    run_phase(spec, "load", mysql_server, database, tmp_path)
    for phase, connections in (("reads", 3), ("more", 6)):
        config = step_file(spec, phase, mysql_server, database, tmp_path / f"{phase}.yaml")
        process = runner(config, tmp_path / phase)
        seen = busiest_sessions(process, mysql_server, database)
        finish(process)
        # The runner's own process keeps one control connection (storage samples).
        workers = {i: s for i, s in seen.items() if int(s["_pid"]) != process.pid}
        assert len(seen) - len(workers) == 1, seen
        assert len(workers) == connections, (phase, seen)
        assert len({s["_pid"] for s in workers.values()}) == 3, (phase, seen)
        assert {s["_client_name"] for s in seen.values()} == {CLIENT_NAMES[driver]}, seen
        environment = json.loads((tmp_path / phase / "environment.json").read_text())
        assert environment["runner"]["client"]["driver"] == driver
        assert (environment["pod"]["threads"], environment["pod"]["processes"]) == (connections, 3)


def test_dataset_and_batch_size_are_what_the_server_stores_and_runs(
    mysql_server: MySQLServer, database: str, tmp_path: Path
) -> None:
    """dataset.shape/records/recordSize/seed are the rows the server holds; phases[].batchSize
    is the rows per INSERT statement the server ran."""
    spec = run_spec(
        runner={"threads": 2},
        dataset={"shape": "ycsb", "records": 300, "recordSize": 500, "seed": 9},
        phases=[{"name": "load", "type": "insert", "batchSize": 25}],
    )
    summary = run_phase(spec, "load", mysql_server, database, tmp_path)
    assert summary["records"] == 300
    stored = query(mysql_server, f"SELECT * FROM `{database}`.usertable")
    assert len(stored) == 300
    fields = [f"field{i}" for i in range(10)]
    # recordSize is the payload beside the key: ten fields of a tenth each.
    assert {sum(len(row[f]) for f in fields) for row in stored} == {500}
    seeded = generator_for(Dataset(shape="ycsb", records=300, record_size=500, seed=9))
    other = generator_for(Dataset(shape="ycsb", records=300, record_size=500, seed=10))
    by_key = {row["YCSB_KEY"]: {k: row[k] for k in ("YCSB_KEY", *fields)} for row in stored}
    assert by_key == {seeded.key(n): seeded.record(n) for n in range(1, 301)}
    assert by_key[other.key(1)] != other.record(1)
    # Two connections of 150 records each, 25 records per INSERT: 12 statements.
    ran = statements(mysql_server, database)
    assert count_of(ran, r"INSERT INTO `usertable`") == 12, ran
    assert summary["operations"] == 12


def test_mix_weights_are_the_statements_the_server_ran(
    mysql_server: MySQLServer, database: str, tmp_path: Path
) -> None:
    """Each of mix.read/insert/update/scan/readModifyWrite is its statements at the
    server, in the runner's counts exactly and in proportion to its weight. The
    server's counts are read once the sessions ended (sessions_ended) from the
    digests' histograms, not COUNT_STAR, which loses a count now and then when
    both connections end the same statement at once (statements says how)."""
    mix = {"read": 30, "insert": 10, "update": 20, "scan": 15, "readModifyWrite": 25}
    spec = run_spec(
        runner={"threads": 2},
        dataset={"shape": "ycsb", "records": 400, "recordSize": 200},
        phases=[{"name": "load", "type": "insert", "batchSize": 50},
                {"name": "mix", "type": "mix", "mix": mix, "operations": 2000}],
    )  # fmt: skip
    run_phase(spec, "load", mysql_server, database, tmp_path)
    before = statements(mysql_server, database)
    summary = run_phase(spec, "mix", mysql_server, database, tmp_path)
    ran = statements(mysql_server, database) - before
    by_type = {k: v["operations"] for k, v in summary["operationsByType"].items()}
    assert sum(by_type.values()) == 2000
    for kind, weight in mix.items():
        assert abs(by_type[kind] / 2000 - weight / 100) < 0.05, (kind, by_type)
    point = count_of(ran, r"SELECT .* FROM `usertable` WHERE `YCSB_KEY` = \?")
    scans = count_of(ran, r"SELECT .* FROM `usertable` WHERE `YCSB_KEY` >= \?")
    assert point == by_type["read"] + by_type["readModifyWrite"], ran
    assert scans == by_type["scan"], ran
    assert count_of(ran, r"UPDATE `usertable`") == by_type["update"] + by_type["readModifyWrite"]
    assert count_of(ran, r"INSERT INTO `usertable`") == by_type["insert"], ran
    assert len(query(mysql_server, f"SELECT 1 FROM `{database}`.usertable")) == (
        400 + by_type["insert"]
    )


def test_an_insert_phases_operations_are_the_records_it_loads(
    mysql_server: MySQLServer, database: str, tmp_path: Path
) -> None:
    """phases[].operations on an insert phase loads that many records, not dataset.records."""
    spec = run_spec(
        dataset={"shape": "flat45", "records": 300, "recordSize": 256},
        phases=[{"name": "load", "type": "insert", "operations": 120, "batchSize": 10}],
    )
    summary = run_phase(spec, "load", mysql_server, database, tmp_path)
    assert summary["records"] == 120
    assert len(query(mysql_server, f"SELECT 1 FROM `{database}`.flat45")) == 120


def mysqlclient(server: MySQLServer, database: str) -> Any:
    """A connection of the runner's default client library (mysqlclient) to `database`."""
    args = server.connect_args()
    return MySQLdb.connect(
        host=args["host"], port=args["port"], user=args["user"],
        password=args["password"], database=database,
    )  # fmt: skip


def one_row_table(server: MySQLServer, database: str, conn: Any) -> None:
    """`database`.t holding the one row (id 1) the digest tests select, committed."""
    query(server, f"CREATE DATABASE `{database}`", conn=conn)
    query(server, f"CREATE TABLE `{database}`.t (id INT PRIMARY KEY)", conn=conn)
    query(server, f"INSERT INTO `{database}`.t VALUES (1)", conn=conn)
    conn.commit()


def test_the_digest_counts_every_statement_once_its_session_ended(
    mysql_server: MySQLServer, database: str
) -> None:
    """What the counting tests above rely on (sessions_ended): a client (the
    runner's default library) has its answer and closes its connection, then
    the digest summary is read on a connection already open. Read without
    waiting for the session to end, it was one short in 6-12% of tries."""
    reader = connect(mysql_server)
    try:
        one_row_table(mysql_server, database, reader)
        for done in range(1, 201):
            client = mysqlclient(mysql_server, database)
            try:
                cursor = client.cursor()
                cursor.execute("SELECT id FROM t WHERE id = 1")
                assert cursor.fetchall() == ((1,),)
            finally:
                client.close()
            sessions_ended(mysql_server, database, conn=reader)
            ran = count_of(statements(mysql_server, database, reader), r"SELECT `id` FROM `t`")
            assert ran == done, f"the digest had {ran} SELECTs after {done}"
    finally:
        reader.close()


def test_the_digest_counts_every_statement_of_sessions_running_at_once(
    mysql_server: MySQLServer, database: str
) -> None:
    """What the counting tests above rely on (statements): two sessions run the
    same SELECT at once, thousands of times, as the runner's connections do, and
    every one is counted. Read from COUNT_STAR instead, this test failed in 3
    of 20 runs (3,998 and 3,999 of 4,000: statements says why)."""
    setup = connect(mysql_server)
    try:
        one_row_table(mysql_server, database, setup)
    finally:
        setup.close()
    each = 2000

    def client() -> None:
        conn = mysqlclient(mysql_server, database)
        try:
            cursor = conn.cursor()
            for _ in range(each):
                cursor.execute("SELECT id FROM t WHERE id = 1")
                assert cursor.fetchall() == ((1,),)
        finally:
            conn.close()

    # mysqlclient lets go of the GIL while it waits for the server: both run at once.
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        for done in [pool.submit(client) for _ in range(2)]:
            done.result()
    sessions_ended(mysql_server, database)
    assert count_of(statements(mysql_server, database), r"SELECT `id` FROM `t`") == 2 * each
