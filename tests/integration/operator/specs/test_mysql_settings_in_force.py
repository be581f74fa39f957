"""A MySQL-family target's settings, durability and memory limit are the server's own
variables: the flags the operator renders into the chart (parse_spec ->
topology_request -> helm) start a real mariadbd / mysqld, which then shows them
(SHOW GLOBAL VARIABLES). PostgreSQL's twin is test_postgres_chart's
test_rendered_settings_take_effect_in_a_real_server.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from dbbench_contract.api import memory_floors, parse_spec
from dbbench_operator.naming import RunRef
from dbbench_operator.settings import BUILT_IN_ENGINE_IMAGES
from dbbench_operator.specs.addresses import topology_request
from dbbench_operator.specs.databases.rendering import render
from dbbench_operator.specs.databases.sizing import MIB, innodb_buffer_pool
from tests.integration.runner.sql_contract import SqlServer, connect

pytestmark = pytest.mark.integration

RUN = RunRef(name="in-force", namespace="team-a", uid="31-uid", generation=1)
LIMIT = 768 * MIB
# innodb_io_capacity is in every engine's allow-list and left alone by the profiles.
USER_SETTINGS = {"max_connections": "40", "innodb_io_capacity": "300"}
PROFILE = {"fast": {"innodb_flush_log_at_trx_commit": "2", "sync_binlog": "0"},
           "safe": {"innodb_flush_log_at_trx_commit": "1", "sync_binlog": "1"}}  # fmt: skip


def rendered_server_flags(
    engine: str, durability: str, settings: dict[str, str], **overrides: Any
) -> list[str]:
    """The database container's server flags, as the operator renders them for the spec
    (`overrides`: other spec fields, e.g. runner)."""
    spec = parse_spec({
        "targets": [{"name": "db", "engine": engine, "durability": durability,
                     "settings": settings}],
        "hardware": {"resources": {"limits": {"cpu": "1", "memory": "768Mi"},
                                   "requests": {"cpu": "1", "memory": "768Mi"}}},
        "dataset": {"records": 1000, "recordSize": 256},
        "phases": [{"name": "load", "type": "insert"}],
    } | overrides)  # fmt: skip
    request = topology_request(RUN, spec, spec.targets[0], "cluster.local", BUILT_IN_ENGINE_IMAGES)
    (sts,) = [d for d in render(request) if d["kind"] == "StatefulSet"]
    server, *flags = sts["spec"]["template"]["spec"]["containers"][0]["args"]
    assert server in ("mariadbd", "mysqld")
    # The data directory is the pod's volume; the fixture gives the server its own.
    return [f for f in flags if not f.startswith("--datadir=")]


def variables(server: SqlServer, names: list[str]) -> dict[str, str]:
    conn = connect(server)
    try:
        cursor = conn.cursor()
        cursor.execute("SHOW GLOBAL VARIABLES")
        shown = {str(k): str(v) for k, v in cursor.fetchall()}
    finally:
        conn.close()
    return {name: shown[name] for name in names}


def expected(engine: str, durability: str, settings: dict[str, str]) -> dict[str, str]:
    """The pool leaves room for what the server holds besides it (the admission
    floor's figures, performance_schema at the engine's default)."""
    connections = int(settings["max_connections"])
    fp = memory_floors.FOOTPRINTS[engine]
    overhead = memory_floors.overhead(fp, connections, fp.performance_schema_default)
    pool, _ = innodb_buffer_pool(LIMIT, connections, floor_overhead=overhead)
    return {**PROFILE[durability], **settings, "innodb_buffer_pool_size": str(pool)}


CASES = [
    ("fast", USER_SETTINGS),
    ("safe", USER_SETTINGS),
    # settings win over the durability profile when both set a flag
    ("safe", {**USER_SETTINGS, "innodb_flush_log_at_trx_commit": "0"}),
]


@pytest.mark.parametrize(("durability", "settings"), CASES, ids=["fast", "safe", "settings-win"])
def test_mariadb_runs_with_the_targets_settings_durability_and_memory(
    mariadb_factory: Callable[..., Any], helm_on_path: str, durability: str,
    settings: dict[str, str],
) -> None:  # fmt: skip
    flags = rendered_server_flags("mariadb", durability, settings)
    server = mariadb_factory(extra_args=flags)
    wanted = expected("mariadb", durability, settings)
    assert variables(server, list(wanted)) == wanted
    # the pool the operator computed from the memory limit fits in it
    assert int(wanted["innodb_buffer_pool_size"]) < LIMIT


def test_mysql_runs_with_the_targets_settings_durability_and_memory(
    mysql_factory: Callable[..., Any], helm_on_path: str
) -> None:
    flags = rendered_server_flags("mysql", "fast", USER_SETTINGS)
    (server,) = mysql_factory([1], extra_args=flags)
    wanted = {**expected("mysql", "fast", USER_SETTINGS), "innodb_buffer_pool_instances": "1"}
    assert variables(server, list(wanted)) == wanted
