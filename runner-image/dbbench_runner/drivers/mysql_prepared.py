"""Server-side prepared statements on MySQL/MariaDB through mysql-connector-python.

`runner.statements: prepared`: each connection prepares each statement once
(COM_STMT_PREPARE) and executes it with binary values (COM_STMT_EXECUTE), one
round trip per statement as sysbench's default and a JDBC application with
server-side prepared statements do. The connector's prepared cursor is not
used: it sends COM_STMT_RESET before every execute (a second round trip,
point reads ~40% slower, docs/decisions.md) and holds one statement, so a mix
would prepare again at every change of operation type. The connection's own
commands are called instead, as the cursor calls them; the pure-Python
connection and the C extension's take different arguments (statement id and
parameter descriptions vs the C statement object), so each has its branch.
mysqlclient (MySQLdb) has no prepared statements; admission refuses
`prepared` with it.
"""

from __future__ import annotations

import re
from typing import Any

# %s placeholders as the protocol's ? (the statements hold no other %s).
_PLACEHOLDER = re.compile(rb"%s")


class ConnectorStatements:
    """One connection's prepared statements (statement text -> the server's handle)."""

    def __init__(self, conn: Any) -> None:
        from mysql.connector.connection import MySQLConnection  # noqa: PLC0415

        self._conn = conn
        self._pure = isinstance(conn, MySQLConnection)
        self._prepared: dict[str, Any] = {}
        # START TRANSACTION goes as text: preparing it would gain nothing.
        self._cursor = conn.cursor()

    def _prepare(self, statement: str) -> Any:
        prepared = self._prepared.get(statement)
        if prepared is None:
            text = _PLACEHOLDER.sub(b"?", statement.encode())
            prepared = self._prepared[statement] = self._conn.cmd_stmt_prepare(text)
        return prepared

    def _execute(self, statement: str, params: list[object]) -> tuple[int, int | None]:
        """(affected rows, None) of a write; (0, rows) of a SELECT, every row loaded."""
        conn = self._conn
        prepared = self._prepare(statement)
        if self._pure:
            result = conn.cmd_stmt_execute(
                prepared["statement_id"], data=params, parameters=prepared["parameters"]
            )
            if isinstance(result, dict):
                return int(result.get("affected_rows") or 0), None
            conn.unread_result = True  # what the prepared cursor sets before reading
            rows, _ = conn.get_rows(binary=True, columns=result[1])
            return 0, len(rows)
        result = conn.cmd_stmt_execute(prepared, *params)
        if not prepared.have_result_set:
            return int((result or {}).get("affected_rows") or 0), None
        rows, _ = conn.get_rows(prep_stmt=prepared)
        return 0, len(rows)

    def fetch(self, statement: str, params: list[object]) -> int:
        """Run a SELECT, load every row into Python values; the row count."""
        return self._execute(statement, params)[1] or 0

    def write(self, statement: str, params: list[object]) -> int:
        """Run an INSERT or UPDATE; the rows it matched (CLIENT_FOUND_ROWS)."""
        return self._execute(statement, params)[0]

    def execute(self, statement: str) -> None:
        """A statement without values, as text (START TRANSACTION)."""
        self._cursor.execute(statement)

    def close(self) -> None:
        """Deallocate the statements on the server (COM_STMT_CLOSE has no reply)."""
        for prepared in self._prepared.values():
            self._conn.cmd_stmt_close(prepared["statement_id"] if self._pure else prepared)
        self._prepared = {}
        self._cursor.close()
