"""`SqlSession` over a mysql-connector connection (the operator's real driver)."""

from __future__ import annotations

from typing import Any

import mysql.connector


def _plain(value: Any) -> Any:
    # The pure-Python connector can hand back bytearrays for SHOW output.
    if isinstance(value, (bytes, bytearray)):
        return value.decode()
    return value


class ConnectorSession:
    """execute/query on one autocommit connection."""

    def __init__(self, connection: Any) -> None:
        self._connection = connection

    def execute(self, sql: str) -> None:
        cursor = self._connection.cursor()
        try:
            cursor.execute(sql)
            if cursor.with_rows:
                cursor.fetchall()
        finally:
            cursor.close()

    def query(self, sql: str) -> list[dict[str, Any]]:
        cursor = self._connection.cursor(dictionary=True)
        try:
            cursor.execute(sql)
            rows = cursor.fetchall()
        finally:
            cursor.close()
        return [{key: _plain(value) for key, value in row.items()} for row in rows]

    def close(self) -> None:
        self._connection.close()


def connect(
    host: str, port: int, user: str, password: str, *, timeout_s: float = 10.0
) -> ConnectorSession:
    """An autocommit session; raises mysql.connector.Error when unreachable."""
    connection = mysql.connector.connect(
        host=host,
        port=port,
        user=user,
        password=password,
        autocommit=True,
        connection_timeout=int(timeout_s),
    )
    return ConnectorSession(connection)
