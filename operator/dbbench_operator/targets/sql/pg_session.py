"""`SqlSession` over a psycopg connection (the operator's PostgreSQL driver)."""

from __future__ import annotations

import math
from typing import Any

import psycopg
from psycopg.rows import dict_row

from dbbench_operator.targets.sql.base import ConnectionSession

# Where the operator logs in: every cluster has it (the benchmark database may not).
MAINTENANCE_DATABASE = "postgres"


class PsycopgSession(ConnectionSession):
    """execute/query on one autocommit connection (ALTER SYSTEM refuses a transaction)."""

    _connection: psycopg.Connection[dict[str, Any]]

    def execute(self, sql: str) -> None:
        self._connection.execute(sql.encode())

    def query(self, sql: str) -> list[dict[str, Any]]:
        return list(self._connection.execute(sql.encode()).fetchall())


def connect(
    host: str,
    port: int,
    user: str,
    password: str,
    *,
    database: str = MAINTENANCE_DATABASE,
    timeout_s: float = 10.0,
) -> PsycopgSession:
    """An autocommit session; raises psycopg.Error when unreachable."""
    connection = psycopg.connect(
        host=host,
        port=port,
        user=user,
        password=password,
        dbname=database,
        autocommit=True,
        connect_timeout=max(2, math.ceil(timeout_s)),
        row_factory=dict_row,
        application_name="dbbench-operator",
    )
    return PsycopgSession(connection)
