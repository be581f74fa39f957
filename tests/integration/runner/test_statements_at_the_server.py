"""runner.statements as PostgreSQL, MariaDB and MySQL saw it.

Step files are built from a spec by the operator's own builder and run by the
runner as a pod runs it (`python -m dbbench_runner run`), phase after phase:
a batched load, a mix of reads, inserts and updates, the four queries and
point reads. The servers then say how each statement came:

- PostgreSQL logs every statement of the test's database (`ALTER DATABASE ...
  SET log_statement = 'all'`): `execute dbbench_<n>: ...` is an execution of a
  statement the runner prepared (Parse once, then Bind/Execute), `statement:
  ...` one sent as text (the simple query protocol), `execute <unnamed>` the
  extended protocol without a prepared statement (psycopg's cursors).
- MariaDB and MySQL write their general log (a table here): a `Prepare` then
  `Execute` commands for prepared statements, `Query` for text.

Each operation the runner counted is one statement of its kind at the server,
prepared or not as the field says, and a field the runner ignored fails them.
docs/fields.md names these tests for `spec.runner.statements`.
"""

from __future__ import annotations

import collections
import json
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from dbbench_contract.api import BenchmarkRunSpec, parse_spec
from dbbench_contract.summary import StepSummary
from dbbench_operator.naming import RunRef
from dbbench_operator.specs.addresses import target_access
from dbbench_operator.specs.plan import plan
from dbbench_operator.specs.runner_job import build_step_config
from dbbench_operator.specs.table_state import table_state
from tests.fixtures.mariadb import MariaDBServer
from tests.fixtures.mysql import MySQLServer
from tests.fixtures.postgres import PostgresServer
from tests.integration.runner.sql_contract import SqlServer, connect

pytestmark = pytest.mark.integration

RUN = RunRef(name="statements", namespace="team-a", uid="30-uid", generation=1)
# indexed4: the one shape with the queries; every workload's statements in four phases.
PHASES = [
    {"name": "load", "type": "insert", "batchSize": 10},
    {"name": "mix", "type": "mix",
     "mix": {"read": 40, "insert": 20, "update": 20, "scan": 10, "readModifyWrite": 10},
     "operations": 240},
    {"name": "queries", "type": "query", "operations": 40},
    {"name": "reads", "type": "pointReads", "operations": 120},
]  # fmt: skip
VERBS = ("SELECT", "INSERT", "UPDATE")
# The statements of one operation, by type (every other type is one SELECT).
STATEMENTS_OF = {
    "insert": ["INSERT"],
    "update": ["UPDATE"],
    "readModifyWrite": ["SELECT", "UPDATE"],
}


def make_spec(engine: str, runner: dict[str, Any]) -> BenchmarkRunSpec:
    return parse_spec({
        "targets": [{"name": "db", "engine": engine}],
        "runner": {"threads": 2, **runner},
        "dataset": {"shape": "indexed4", "records": 200, "recordSize": 200},
        "phases": PHASES,
    })  # fmt: skip


def run_phases(spec: BenchmarkRunSpec, target: dict[str, Any], tmp: Path) -> dict[str, Any]:
    """Every phase's summary.json, each phase run by the runner from the operator's step
    file (later phases told what the load wrote, as the operator tells them)."""
    summaries: dict[str, Any] = {}
    merged: dict[int, StepSummary] = {}
    steps = plan(spec)
    for step in steps:
        table = table_state(steps, step, merged, spec.dataset.records)
        wire = build_step_config(spec, step, target_access(RUN, spec, 0), table).to_wire()
        wire["target"] = target
        wire["pod"] = {**wire["pod"], "index": 0}
        config = tmp / f"{step.phase}.yaml"
        config.write_text(yaml.safe_dump(wire))
        done = subprocess.run(
            [sys.executable, "-m", "dbbench_runner", "run", "--config", str(config),
             "--out", str(tmp / step.phase)],
            capture_output=True, text=True, timeout=180, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        text = (tmp / step.phase / "summary.json").read_text()
        summaries[step.phase] = json.loads(text)
        merged[step.index] = StepSummary.model_validate_json(text)
    return summaries


def statements_by_verb(summary: dict[str, Any]) -> collections.Counter[str]:
    """The statements each counted operation is: one per operation (a batch is one INSERT),
    a read-modify-write two (its SELECT, then its UPDATE)."""
    counted: collections.Counter[str] = collections.Counter()
    for kind, seen in summary["operationsByType"].items():
        for verb in STATEMENTS_OF.get(kind, ["SELECT"]):
            counted[verb] += int(seen["operations"])
    return counted


def expected(summaries: dict[str, Any]) -> collections.Counter[str]:
    return sum((statements_by_verb(s) for s in summaries.values()), collections.Counter())


def environment_statements_of(tmp: Path, phases: list[str]) -> set[str]:
    """runner.client.statements of each phase's environment.json."""
    return {
        json.loads((tmp / phase / "environment.json").read_text())["runner"]["client"]["statements"]
        for phase in phases
    }


def environment_statements(tmp: Path) -> set[str]:
    return environment_statements_of(tmp, [str(phase["name"]) for phase in PHASES])


# PostgreSQL -------------------------------------------------------------------------------

LOGGED = re.compile(r"LOG:  (?:statement|execute (?P<name>[^:]+)): (?P<text>.*)$")


@pytest.fixture
def pg_database(postgres_server: PostgresServer) -> Iterator[str]:
    """A database whose sessions log every statement (set before the runner connects)."""
    name = f"st_{uuid.uuid4().hex[:12]}"
    with postgres_server.connect() as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
        conn.execute(f"ALTER DATABASE \"{name}\" SET log_statement = 'all'")
    yield name
    with postgres_server.connect() as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def pg_logged(log: str) -> collections.Counter[tuple[str, str]]:
    """(how, verb) of every logged SELECT, INSERT, UPDATE on the workload's table; how is
    prepared (a named statement), simple (text) or unnamed (extended protocol)."""
    seen: collections.Counter[tuple[str, str]] = collections.Counter()
    for line in log.splitlines():
        match = LOGGED.search(line)
        if match is None or '"indexed4"' not in match["text"]:
            continue
        verb = match["text"].split(None, 1)[0].upper()
        if verb not in VERBS:
            continue  # the control connection's CREATE TABLE/INDEX
        name = match["name"]
        how = "simple" if name is None else "unnamed" if name == "<unnamed>" else "prepared"
        seen[how, verb] += 1
    return seen


def pg_named_executions(log: str) -> set[str]:
    """Names of every prepared statement executed in the logging database (any table)."""
    return {m["name"] for line in log.splitlines()
            if (m := LOGGED.search(line)) and m["name"] not in (None, "<unnamed>")}  # fmt: skip


@pytest.mark.parametrize(("statements", "how"), [(None, "prepared"), ("simple", "simple")])
def test_postgresql_runs_the_statements_prepared_or_simple(
    postgres_server: PostgresServer,
    pg_database: str,
    statements: str | None,
    how: str,
    tmp_path: Path,
) -> None:
    """Unset (PostgreSQL's default, as before the field): every operation an execution of
    a statement the connection prepared. simple: every operation a statement text, and no
    connection of the runner executes any prepared statement."""
    spec = make_spec("postgresql", {} if statements is None else {"statements": statements})
    target = {
        "name": "db", "engine": "postgresql", "host": "127.0.0.1",
        "port": postgres_server.port, "user": postgres_server.user,
        "password": postgres_server.password, "database": pg_database,
    }  # fmt: skip
    start = postgres_server.log.stat().st_size
    summaries = run_phases(spec, target, tmp_path)
    with postgres_server.log.open(errors="replace") as log_file:
        log_file.seek(start)
        log = log_file.read()
    want = expected(summaries)
    assert all(want[verb] > 0 for verb in VERBS), want
    seen = pg_logged(log)
    assert seen == collections.Counter({(how, verb): want[verb] for verb in VERBS}), seen
    named = pg_named_executions(log)
    if how == "prepared":
        assert named, log[-2000:]
        assert all(n.startswith("dbbench_") for n in named), named
    else:
        # Nor psycopg's own automatic preparing (after five runs) on the control connection.
        assert named == set(), named
    assert environment_statements(tmp_path) == {how}


# MariaDB and MySQL ------------------------------------------------------------------------


@pytest.fixture(params=["mariadb", "mysql"])
def sql_server(request: pytest.FixtureRequest) -> tuple[str, SqlServer]:
    engine = str(request.param)
    fixture = "mariadb" if engine == "mariadb" else "mysql_server"
    server: MariaDBServer | MySQLServer = request.getfixturevalue(fixture)
    return engine, server


@pytest.fixture
def general_log(sql_server: tuple[str, SqlServer]) -> Iterator[None]:
    """The server's general log into mysql.general_log while the test runs."""
    conn = connect(sql_server[1])
    cursor = conn.cursor()
    cursor.execute("SELECT @@global.log_output, @@global.general_log")
    output, was_on = cursor.fetchone()
    cursor.execute("SET GLOBAL log_output = 'TABLE'")
    cursor.execute("SET GLOBAL general_log = 1")
    try:
        yield
    finally:
        cursor.execute(f"SET GLOBAL general_log = {int(was_on)}")
        cursor.execute("SET GLOBAL log_output = %s", (output,))
        conn.close()


def commands(server: SqlServer, database: str) -> collections.Counter[tuple[str, str]]:
    """(command, verb) of what the sessions that connected to `database` sent: the
    runner's worker connections (its control connection connects without a database).
    verb: SELECT, INSERT or UPDATE of a statement on the workload's table, else ""."""
    conn = connect(server)
    try:
        cursor = conn.cursor()
        cursor.execute(
            "SELECT thread_id, command_type, CONVERT(argument USING utf8mb4) "
            "FROM mysql.general_log WHERE thread_id IN (SELECT thread_id FROM "
            "mysql.general_log WHERE command_type = 'Connect' AND argument LIKE %s)",
            (f"% on {database} %",),
        )
        rows = cursor.fetchall()
    finally:
        conn.close()
    seen: collections.Counter[tuple[str, str]] = collections.Counter()
    prepared = set()
    for thread, command, argument in rows:
        text = str(argument)
        # The workload's statements; the connector's own on connect (SET, SELECT) apart.
        verb = text.split(None, 1)[0].upper() if "`indexed4`" in text else ""
        seen[str(command), verb] += 1
        if command == "Prepare":
            prepared.add((thread, text))
    # MySQL 9.7 logs each Prepare twice; distinct statement texts per session do not.
    seen["distinct prepared", ""] = len(prepared)
    return seen


@pytest.mark.parametrize("statements", ["prepared", "simple"])
def test_mysql_and_mariadb_run_the_statements_prepared_or_simple(
    sql_server: tuple[str, SqlServer], general_log: None, statements: str, tmp_path: Path
) -> None:
    """prepared: each worker connection prepares each statement once (Prepare) and runs
    every operation as one Execute, never a Reset stmt (one round trip per operation);
    simple: every operation one Query and nothing prepared. The same client library
    (mysql-connector-python) in both: the field alone makes the difference."""
    del general_log
    engine, server = sql_server
    database = f"st_{uuid.uuid4().hex[:12]}"
    spec = make_spec(engine, {"statements": statements, "mysqlDriver": "mysql-connector-python"})
    target = {
        "name": "db", "engine": engine, "host": "127.0.0.1", "port": server.port,
        "user": "root", "password": server.root_password, "database": database,
    }  # fmt: skip
    try:
        summaries = run_phases(spec, target, tmp_path)
        seen = commands(server, database)
    finally:
        conn = connect(server)
        conn.cursor().execute(f"DROP DATABASE IF EXISTS `{database}`")
        conn.close()
    want = expected(summaries)
    ran = "Execute" if statements == "prepared" else "Query"
    for verb in VERBS:
        assert seen[ran, verb] == want[verb], (verb, seen, want)
    prepares = sum(n for (command, _), n in seen.items() if command == "Prepare")
    if statements == "prepared":
        assert not any(seen["Query", verb] for verb in VERBS), seen
        # Once per statement and connection: each deallocated once when the runner
        # closes (re-preparing, as the connector's prepared cursor does when its
        # statement changes, closes the previous one each time).
        assert 0 < seen["distinct prepared", ""] < sum(want.values()) / 5, seen
        assert seen["Close stmt", ""] == seen["distinct prepared", ""], seen
        assert not any(command == "Reset stmt" for command, _ in seen), seen
    else:
        assert prepares == 0, seen
        assert not any(command == "Execute" for command, _ in seen), seen
    assert environment_statements(tmp_path) == {statements}


# Every shape in the mode its engine does not default to ------------------------------------

OTHER_MODE = {
    "mariadb": {"statements": "prepared", "mysqlDriver": "mysql-connector-python"},
    "postgresql": {"statements": "simple"},
}


@pytest.mark.parametrize("shape", ["vehicle", "news"])
@pytest.mark.parametrize("engine", ["mariadb", "postgresql"])
def test_every_shape_runs_in_the_mode_its_engine_does_not_default_to(
    request: pytest.FixtureRequest, engine: str, shape: str, tmp_path: Path
) -> None:
    """vehicle's 14-table read and its item rows, news' tags (each insert a transaction
    with its child rows, BEGIN and COMMIT as text around them), scans and
    read-modify-writes: prepared on
    MariaDB, simple on PostgreSQL, every operation succeeds and finds its row (the
    runner counts a read or update of a loaded record that finds none as an error)."""
    database = f"st_{uuid.uuid4().hex[:12]}"
    if engine == "mariadb":
        maria: MariaDBServer = request.getfixturevalue("mariadb")
        login = {"port": maria.port, "user": "root", "password": maria.root_password}
    else:
        pg: PostgresServer = request.getfixturevalue("postgres_server")
        login = {"port": pg.port, "user": pg.user, "password": pg.password}
    mix = {"read": 40, "insert": 20, "update": 20, "scan": 10, "readModifyWrite": 10}
    spec = parse_spec({
        "targets": [{"name": "db", "engine": engine}],
        "runner": {"threads": 2, **OTHER_MODE[engine]},
        "dataset": {"shape": shape, "records": 150},
        "phases": [{"name": "load", "type": "insert", "batchSize": 7},
                   {"name": "mix", "type": "mix", "mix": mix, "operations": 200}],
    })  # fmt: skip
    target = {"name": "db", "engine": engine, "host": "127.0.0.1", "database": database, **login}
    summaries = run_phases(spec, target, tmp_path)
    for phase, summary in summaries.items():
        assert summary["errors"] == 0, (phase, summary["errorsByType"])
    mixed = summaries["mix"]["operationsByType"]
    assert mixed["read"]["rows"] == mixed["read"]["operations"] > 0, mixed
    assert environment_statements_of(tmp_path, ["load", "mix"]) == {
        OTHER_MODE[engine]["statements"]
    }
