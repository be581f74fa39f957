"""Steps after the first continue the target's record numbers and know its count,
the whole chain against a real MariaDB: the operator's step files, run by the real
runner one after another, each fed the summaries of the steps before it (the step
files themselves: tests/unit/operator/specs/test_table_state.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mysql.connector
import pytest

from dbbench_contract.summary import StepSummary
from dbbench_operator.specs.addresses import target_access
from dbbench_operator.specs.plan import plan
from dbbench_operator.specs.runner_job import build_step_config
from dbbench_operator.specs.table_state import table_state
from dbbench_runner.config import parse_config
from dbbench_runner.running import run_step
from tests.fixtures.mariadb import MariaDBServer
from tests.unit.operator.specs.test_table_state import LOAD, LOADED, MIX, RUN, spec_with


@pytest.fixture
def database(mariadb: MariaDBServer) -> Iterator[str]:
    name = f"t_{uuid.uuid4().hex[:12]}"
    yield name
    conn = mysql.connector.connect(**mariadb.connect_args())
    try:
        conn.cursor().execute(f"DROP DATABASE IF EXISTS `{name}`")
    finally:
        conn.close()


def count(server: MariaDBServer, database: str) -> int:
    conn = mysql.connector.connect(**{**server.connect_args(), "database": database})
    try:
        cursor: Any = conn.cursor()
        cursor.execute("SELECT COUNT(*) FROM usertable")
        return int(cursor.fetchone()[0])
    finally:
        conn.close()


@pytest.mark.integration
def test_a_run_of_loads_and_repeated_mixes_never_collides(
    mariadb: MariaDBServer, database: str, tmp_path: Path
) -> None:
    second_load = {**LOAD, "name": "more", "operations": 500}
    spec = spec_with([LOAD, MIX, second_load], repeats=2)
    steps = plan(spec)
    target = {"name": "mariadb", "engine": "mariadb", "host": "127.0.0.1",
              "port": mariadb.port, "user": "root", "password": mariadb.root_password,
              "database": database}  # fmt: skip
    merged: dict[int, StepSummary] = {}
    for step in steps:
        state = table_state(steps, step, merged, spec.dataset.records)
        raw = build_step_config(spec, step, target_access(RUN, spec, 0), state).to_wire()
        raw.update(target=target, pod={"count": 1, "index": 0}, storageEvery=1, processes=1)
        out = tmp_path / f"step-{step.index}"
        assert run_step(parse_config(raw), out) == 0, step
        merged[step.index] = StepSummary.model_validate_json((out / "summary.json").read_text())
        assert merged[step.index].errors == 0, merged[step.index].errors_by_type
        stored = count(mariadb, database)
        storage = merged[step.index].storage
        assert storage is not None
        assert storage.records == stored, step
    inserted = sum(s.records_written for s in merged.values())
    assert count(mariadb, database) == inserted > LOADED + 500
