"""`SqlSession` over a mysql-connector connection (the operator's MySQL and MariaDB driver)."""

from __future__ import annotations

from typing import Any

import mysql.connector

from dbbench_operator.targets.sql.base import ConnectionSession


def _plain(value: Any) -> Any:
    # The pure-Python connector can hand back bytearrays for SHOW output.
    if isinstance(value, (bytes, bytearray)):
        return value.decode()
    return value


class ConnectorSession(ConnectionSession):
    """execute/query on one autocommit connection."""

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


# No statement waits forever: a server that accepts the connection and then
# stops answering fails the call after this long (the setup statements, such
# as CHANGE REPLICATION SOURCE or INSTALL PLUGIN, answer within seconds).
READ_TIMEOUT_S = 30


def connect(
    host: str,
    port: int,
    user: str,
    password: str,
    *,
    timeout_s: float = 10.0,
    read_timeout_s: int = READ_TIMEOUT_S,
) -> ConnectorSession:
    """An autocommit session; raises mysql.connector.Error when unreachable or silent.

    `connection_timeout` bounds the connect and handshake; without
    `read_timeout`/`write_timeout` the connector waits on a silent socket for ever.
    """
    connection = mysql.connector.connect(
        host=host,
        port=port,
        user=user,
        password=password,
        autocommit=True,
        connection_timeout=max(1, int(timeout_s)),
        read_timeout=read_timeout_s,
        write_timeout=read_timeout_s,
    )
    return ConnectorSession(connection)
