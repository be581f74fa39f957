"""MySQL and MariaDB connections fit the server (pure): what a run needs, the
`max_connections` the operator renders from it, and the admission check of a
user's setting below it. At real servers:
tests/integration/operator/specs/test_mysql_max_connections.py; through the operator
on the real API server: tests/integration/operator/test_operator_lifecycle.py
(test_semantic_error_fails_once_with_the_field_named); on the node:
tests/e2e/test_connections.py."""

from __future__ import annotations

from typing import Any

import pytest

from dbbench_contract.api import parse_spec
from dbbench_contract.api.connections import mysql_connections_needed
from dbbench_contract.api.semantics import check
from dbbench_operator.naming import RunRef
from dbbench_operator.settings import BUILT_IN_ENGINE_IMAGES
from dbbench_operator.specs.addresses import topology_request
from dbbench_operator.specs.databases.sizing import engine_settings

FIELD = "spec.targets[0].settings.max_connections"
RUNNER = {"pods": 2, "threads": 100}
# 2 pods x (100 workers + 1 control), the operator's session, 10 spare.
NEEDED = 2 * (100 + 1) + 1 + 10


def spec(engine: str, target: dict[str, Any] | None = None, **changes: Any) -> dict[str, Any]:
    return {
        "targets": [{"name": "db", "engine": engine, **(target or {})}],
        "runner": RUNNER,
        "phases": [{"name": "load", "type": "insert"}],
        **changes,
    }


def problems(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [(p.field, p.message) for p in check(parse_spec(body))]


@pytest.mark.parametrize("engine", ["mysql", "mariadb"])
def test_a_setting_below_the_runs_connections_is_refused_with_the_value_that_fits(
    engine: str,
) -> None:
    ((field, message),) = problems(spec(engine, {"settings": {"max_connections": "151"}}))
    assert field == FIELD
    assert f'at least "{NEEDED}"' in message
    assert "runner.pods 2 x (threads 100 + 1 control)" in message
    # The value it names is accepted, one less is not.
    assert problems(spec(engine, {"settings": {"max_connections": str(NEEDED)}})) == []
    below = spec(engine, {"settings": {"max_connections": str(NEEDED - 1)}})
    assert [f for f, _ in problems(below)] == [FIELD]


@pytest.mark.parametrize("engine", ["mysql", "mariadb"])
def test_unset_the_operator_renders_what_the_run_needs(engine: str) -> None:
    body = parse_spec(spec(engine))
    assert check(body) == []
    request = topology_request(
        RunRef("conns", "team-a", "uid-1"), body, body.targets[0], "cluster.local",
        BUILT_IN_ENGINE_IMAGES,
    )  # fmt: skip
    assert request.connections == NEEDED
    assert engine_settings(request)["max_connections"] == str(NEEDED)


def test_the_phase_with_most_threads_and_each_replica_count() -> None:
    phases = [
        {"name": "load", "type": "insert", "threads": 8},
        {"name": "reads", "type": "pointReads", "threads": 150, "duration": "1m"},
    ]
    body = parse_spec(spec("mysql", {"topology": "primaryReplica", "members": 3},
                           runner={"pods": 2, "threads": 4}, phases=phases))  # fmt: skip
    # 2 x (150 + 1) + the operator + 2 replicas' IO threads on the primary + 10.
    assert mysql_connections_needed(body, body.targets[0]) == 2 * 151 + 1 + 2 + 10


def test_postgresql_keeps_its_own_check() -> None:
    # PostgreSQL counts its reserved superuser slots: one problem, its own words.
    ((field, message),) = problems(spec("postgresql", {"settings": {"max_connections": "20"}}))
    assert (field, "minus 3 reserved" in message) == (FIELD, True)
