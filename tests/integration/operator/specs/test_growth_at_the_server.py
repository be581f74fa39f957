"""Issue 30, item 1: reads draw their keys from everything the run has loaded so
far, seen at real MariaDB and PostgreSQL servers.

The operator's plan and step files for a run whose load grows its table in
three parts of 200 records, with a point-read phase and a read/update/insert
mix measured after each part, are run one after another by the real runner,
each step given the summaries of those before it (as the operator does). The
data set is 100 records (`dataset.records`): until this issue every read drew
from 1..100. The servers log every statement of the measured steps (MariaDB's
general log, PostgreSQL's `log_statement = all` with the bound parameters),
and the keys they received are read back: after part i, reads and updates
touch keys up to 200 x i, including keys of the part just added and never a
key beyond it; the mix's inserts land past the whole planned load, so the
table holds 1..600 exactly plus the mix's records (the pure steps:
tests/unit/operator/specs/test_growth_plan.py).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest

from dbbench_contract.summary import StepSummary
from dbbench_operator.specs.addresses import target_access
from dbbench_operator.specs.plan import Step, plan
from dbbench_operator.specs.runner_job import build_step_config
from dbbench_operator.specs.table_state import table_state
from dbbench_runner.config import parse_config
from dbbench_runner.running import run_step
from tests.fixtures.mariadb import MariaDBServer, start_mariadb
from tests.fixtures.postgres import PostgresServer
from tests.integration.runner.sql_contract import fetch_all as maria_sql
from tests.unit.operator.specs.test_table_state import RUN, spec_with

pytestmark = pytest.mark.integration

DATASET = 100  # dataset.records: what reads drew from before this issue
PART = 200
PARTS = 3
PHASES = [
    {"name": "load", "type": "insert", "operations": PART * PARTS, "batchSize": 50,
     "growth": {"steps": PARTS, "measure": ["reads", "oltp"]}},
    {"name": "reads", "type": "pointReads", "operations": 150},
    {"name": "oltp", "type": "mix", "mix": {"read": 1, "update": 1, "insert": 1},
     "operations": 90},
]  # fmt: skip
MARIADB_KEY = re.compile(r"^(SELECT|UPDATE) .*WHERE `id` = (\d+)$", re.DOTALL)
PG_STATEMENT = re.compile(r'execute \S+: (SELECT|UPDATE) .*WHERE "id" = \$(\d+)')
PG_PARAMETERS = re.compile(r"parameters: (.*)$", re.IGNORECASE)


# -- MariaDB: the general log -------------------------------------------------


@pytest.fixture(scope="module")
def mariadb_logging(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MariaDBServer]:
    """Its own server: the general log is server-wide, and goes to a table."""
    started = start_mariadb(tmp_path_factory.mktemp("mariadb-growth"),
                            extra_args=["--log-output=TABLE"])  # fmt: skip
    try:
        yield started
    finally:
        started.stop()


@contextmanager
def maria_keys(server: MariaDBServer) -> Iterator[list[tuple[str, int]]]:
    """(SELECT | UPDATE, key) of every statement on a key while the block runs."""
    found: list[tuple[str, int]] = []
    maria_sql(server, "TRUNCATE TABLE mysql.general_log")
    maria_sql(server, "SET GLOBAL general_log = ON")
    try:
        yield found
    finally:
        maria_sql(server, "SET GLOBAL general_log = OFF")
    rows = maria_sql(server, "SELECT argument FROM mysql.general_log "
                             "WHERE command_type = 'Query'")  # fmt: skip
    for (argument,) in rows:
        text = argument if isinstance(argument, str) else bytes(argument).decode()
        match = MARIADB_KEY.match(text.strip())
        if match and "`indexed4`" in text:
            found.append((match.group(1), int(match.group(2))))


# -- PostgreSQL: log_statement = all, with the bound parameters ---------------


def pg_keys_from(lines: list[str]) -> list[tuple[str, int]]:
    """(SELECT | UPDATE, key) of each logged execution: its statement line names
    the key's parameter, the DETAIL line after it gives the values."""
    found = []
    for index, line in enumerate(lines):
        match = PG_STATEMENT.search(line)
        if match is None or '"indexed4"' not in line:
            continue
        detail = PG_PARAMETERS.search(lines[index + 1])
        assert detail, lines[index : index + 2]
        values = dict(re.findall(r"\$(\d+) = '([^']*)'", detail.group(1)))
        found.append((match.group(1), int(values[match.group(2)])))
    return found


@contextmanager
def pg_keys(server: PostgresServer) -> Iterator[list[tuple[str, int]]]:
    found: list[tuple[str, int]] = []
    start = server.log.stat().st_size
    yield found
    with server.log.open("rb") as handle:
        handle.seek(start)
        found.extend(pg_keys_from(handle.read().decode(errors="replace").splitlines()))


# -- the run, step by step ----------------------------------------------------


def run_plan(target: dict[str, Any], out: Path,
             keys_during: Callable[[], AbstractContextManager[list[tuple[str, int]]]],
             ) -> list[tuple[Step, StepSummary, list[tuple[str, int]]]]:  # fmt: skip
    """Every step of the plan through the real runner, as the operator would run
    them; (step, its summary, the keys the server saw) of each."""
    spec = spec_with(PHASES, dataset={"shape": "indexed4", "records": DATASET})
    steps = plan(spec)
    merged: dict[int, StepSummary] = {}
    seen = []
    for step in steps:
        state = table_state(steps, step, merged, spec.dataset.records)
        raw = build_step_config(spec, step, target_access(RUN, spec, 0), state).to_wire()
        raw.update(target=target, pod={"count": 1, "index": 0}, storageEvery=1, processes=1)
        with keys_during() as keys:
            assert run_step(parse_config(raw), out / step.key) == 0, step
        merged[step.index] = StepSummary.model_validate_json(
            (out / step.key / "summary.json").read_text())  # fmt: skip
        seen.append((step, merged[step.index], keys))
    return seen


def check_reads_follow_the_growth(seen: list[tuple[Step, StepSummary, list[tuple[str, int]]]],
                                  count: Callable[[str], int]) -> None:  # fmt: skip
    inserted = 0
    for step, summary, keys in seen:
        assert summary.errors == 0, (step, summary.errors_by_type)
        if step.phase == "load":
            continue
        loaded = PART * step.growth_step
        assert summary.records_before == loaded + inserted, step  # what the table held
        inserted += summary.records_written
        reads = [k for kind, k in keys if kind == "SELECT"]
        assert reads, (step, keys)
        # Everything loaded so far, and nothing past it: not 1..dataset.records.
        assert all(1 <= k <= loaded for _, k in keys), (step, sorted(k for _, k in keys)[-5:])
        assert max(reads) > DATASET, step
        if step.phase == "reads":  # 150 distinct keys out of `loaded`
            assert len(set(reads)) == len(reads) == 150
            # some from the part just loaded (all 150 outside it: chance below 1e-26)
            assert any(k > loaded - PART for k in reads), step
    # The load's parts are 1..600 exactly, the mixes' inserts past them.
    assert count("id <= 600") == PART * PARTS
    assert count("id > 600") == inserted > 0


def test_mariadb_reads_draw_from_every_part_loaded_so_far(
    mariadb_logging: MariaDBServer, tmp_path: Path
) -> None:
    database = f"g_{uuid.uuid4().hex[:10]}"
    target = {"name": "mariadb", "engine": "mariadb", "host": "127.0.0.1",
              "port": mariadb_logging.port, "user": "root",
              "password": mariadb_logging.root_password, "database": database}  # fmt: skip
    try:
        seen = run_plan(target, tmp_path, lambda: maria_keys(mariadb_logging))

        def count(where: str) -> int:
            rows = maria_sql(mariadb_logging, f"SELECT COUNT(*) FROM indexed4 WHERE {where}",
                             database)  # fmt: skip
            return int(rows[0][0])

        check_reads_follow_the_growth(seen, count)
    finally:
        maria_sql(mariadb_logging, f"DROP DATABASE IF EXISTS `{database}`")


def test_postgresql_reads_draw_from_every_part_loaded_so_far(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    database = f"g_{uuid.uuid4().hex[:10]}"
    with postgres_server.connect() as conn:
        conn.execute(f'CREATE DATABASE "{database}"')
        # Every statement of a session in this database, with its parameters, in the log.
        conn.execute(f"ALTER DATABASE \"{database}\" SET log_statement = 'all'")
    target = {"name": "postgresql", "engine": "postgresql", "host": "127.0.0.1",
              "port": postgres_server.port, "user": postgres_server.user,
              "password": postgres_server.password, "database": database}  # fmt: skip
    try:
        seen = run_plan(target, tmp_path, lambda: pg_keys(postgres_server))

        def count(where: str) -> int:
            args: Any = postgres_server.connect_args(database)
            with psycopg.connect(**args) as conn:
                row = conn.execute(f"SELECT COUNT(*) FROM indexed4 WHERE {where}").fetchone()
            assert row is not None
            return int(row[0])

        check_reads_follow_the_growth(seen, count)
    finally:
        with postgres_server.connect() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
