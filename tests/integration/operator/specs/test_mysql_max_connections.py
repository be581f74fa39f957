"""Connections fit the server, at real servers: the flags the operator renders for a
run of runner.pods 2 x threads 100 start a mariadbd / mysqld whose max_connections
holds every connection the run needs at once (tests/unit/contract/api/test_mysql_connections.py
counts them), with the buffer pool sized for that many; a login past it is refused
("Too many connections"), so the limit is the server's own, not a number on paper.
At the servers' default 151 the run's 152nd connection was refused.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable, Iterator
from typing import Any

import mysql.connector
import pytest

from dbbench_contract.api import parse_spec
from dbbench_contract.api.connections import mysql_connections_needed
from dbbench_operator.specs.databases.sizing import innodb_buffer_pool
from tests.integration.operator.specs.test_mysql_settings_in_force import (
    LIMIT,
    rendered_server_flags,
    variables,
)
from tests.integration.runner.sql_contract import SqlServer, connect

pytestmark = pytest.mark.integration

RUNNER = {"pods": 2, "threads": 10}
# A phase's threads override the runner's: the busiest phase sizes the server.
PHASES = [
    {"name": "load", "type": "insert"},
    {"name": "reads", "type": "pointReads", "threads": 100, "duration": "10s"},
]
TOO_MANY_CONNECTIONS = 1040  # ER_CON_COUNT_ERROR, both engines


def needed(engine: str) -> int:
    spec = parse_spec({"targets": [{"name": "db", "engine": engine}], "runner": RUNNER,
                       "phases": PHASES})  # fmt: skip
    return mysql_connections_needed(spec, spec.targets[0])


@contextlib.contextmanager
def held(connect_one: Callable[[], Any], count: int) -> Iterator[list[Any]]:
    """`count` connections open at once, closed afterwards."""
    opened: list[Any] = []
    try:
        for _ in range(count):
            opened.append(connect_one())
        yield opened
    finally:
        for connection in opened:
            with contextlib.suppress(mysql.connector.Error):
                connection.close()


def check_connections_fit(server: SqlServer, engine: str) -> None:
    wanted = needed(engine)
    assert wanted > 200  # 2 x (100 + 1) of the runner, the operator's, the spare ones
    pool, _ = innodb_buffer_pool(LIMIT, wanted)
    assert variables(server, ["max_connections", "innodb_buffer_pool_size"]) == {
        "max_connections": str(wanted), "innodb_buffer_pool_size": str(pool)
    }  # fmt: skip
    # A user without CONNECTION_ADMIN/SUPER: root may take one connection past the limit.
    password = secrets.token_hex(8)
    admin = connect(server)
    try:
        cursor = admin.cursor()
        cursor.execute(f"CREATE USER 'bench'@'%' IDENTIFIED BY '{password}'")
        cursor.execute("GRANT SELECT ON mysql.* TO 'bench'@'%'")
    finally:
        admin.close()

    def bench() -> Any:
        return mysql.connector.connect(
            host="127.0.0.1", port=server.port, user="bench", password=password
        )

    with held(bench, wanted) as opened:
        assert len(opened) == wanted
        with pytest.raises(mysql.connector.Error) as refused:
            bench().close()
        assert refused.value.errno == TOO_MANY_CONNECTIONS


def test_mariadb_accepts_every_connection_the_run_needs(
    mariadb_factory: Callable[..., Any], helm_on_path: str
) -> None:
    flags = rendered_server_flags("mariadb", "safe", {}, runner=RUNNER, phases=PHASES)
    check_connections_fit(mariadb_factory(extra_args=flags), "mariadb")


def test_mysql_accepts_every_connection_the_run_needs(
    mysql_factory: Callable[..., Any], helm_on_path: str
) -> None:
    flags = rendered_server_flags("mysql", "safe", {}, runner=RUNNER, phases=PHASES)
    (server,) = mysql_factory([1], extra_args=flags)
    check_connections_fit(server, "mysql")
