"""The hot path of the PostgreSQL driver: prepared statements through psycopg's libpq wrapper.

What `cursor.execute` + `fetchall` do (a prepared statement, parameters bound
by the server, every row and column loaded into Python values by psycopg's
C loaders) minus the cursor's Python machinery: its query parsing, adapter
lookups, prepare bookkeeping and its non-blocking wait loop. That machinery
cost about 35 µs of client CPU per point read against about 17 µs here (a
bare loop of each on the same server, `make bench`), so at one connection the
client, not the database, set most of a reported latency. Statements are
prepared once per connection (libpq's PQprepare) and executed with
PQexecPrepared, which releases the GIL while it waits, so the threads of a
worker process overlap their round trips. Parameters travel as text, their
types inferred by the server from the columns they meet (as for an untyped
literal). psycopg.pq and psycopg.adapt.Transformer are psycopg's documented
low-level interfaces; which build runs them (C or binary) is recorded.

`runner.statements: simple` (pgbench -M simple) runs SimpleSession instead:
the statement's text with each value written in as a quoted literal, one
PQexec (the simple query protocol), so the server parses and plans every
call and holds no prepared statement. A quoted literal is of unknown type
until the column it meets decides it, as a text parameter of a prepared
statement is, so both modes send the same values.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import errors, pq
from psycopg.adapt import Transformer

_OK = (pq.ExecStatus.TUPLES_OK, pq.ExecStatus.COMMAND_OK)


def numbered(statement: str) -> str:
    """%s placeholders as PostgreSQL's $1, $2, ... (the statements hold no other %)."""
    parts = statement.split("%s")
    return "".join(f"{part}${i}" for i, part in enumerate(parts[:-1], 1)) + parts[-1]


def _text(value: object) -> bytes:
    if type(value) is int:
        return b"%d" % value
    return str(value).encode()


def _raise(result: pq.abc.PGresult, pgconn: pq.abc.PGconn) -> None:
    """The psycopg error class of the result's SQLSTATE (UniqueViolation, ...)."""
    sqlstate = result.error_field(pq.DiagnosticField.SQLSTATE)
    message = (result.error_message or pgconn.error_message).decode(errors="replace").strip()
    if pgconn.status == pq.ConnStatus.BAD:
        raise psycopg.OperationalError(f"connection lost: {message}")
    try:
        kind = errors.lookup(sqlstate.decode()) if sqlstate else psycopg.DatabaseError
    except KeyError:
        kind = psycopg.DatabaseError
    raise kind(message)


class _Session:
    """One connection's hot path (autocommit unless `begin` was sent); subclasses
    say how one statement with its values reaches the server."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._pgconn = conn.pgconn
        self._loader = Transformer(conn)

    def _run(self, statement: str, params: list[object]) -> pq.abc.PGresult:
        raise NotImplementedError

    def fetch(self, statement: str, params: list[object]) -> int:
        """Run a SELECT and load every row into Python values; the row count."""
        result = self._run(statement, params)
        self._loader.set_pgresult(result)
        return len(self._loader.load_rows(0, result.ntuples, tuple))

    def write(self, statement: str, params: list[object]) -> int:
        """Run an INSERT or UPDATE; the rows it touched."""
        return self._run(statement, params).command_tuples or 0

    def command(self, text: bytes) -> None:
        """BEGIN, COMMIT or ROLLBACK (one round trip each)."""
        result = self._pgconn.exec_(text)
        if result.status not in _OK:
            _raise(result, self._pgconn)

    def close(self) -> None:
        """Nothing of its own to free: closing the connection drops its statements."""

    @property
    def in_transaction(self) -> bool:
        return self._pgconn.transaction_status != pq.TransactionStatus.IDLE


class PreparedSession(_Session):
    """Each statement prepared once on this connection (PQprepare), then executed."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        super().__init__(conn)
        self._names: dict[str, bytes] = {}

    def _run(self, statement: str, params: list[object]) -> pq.abc.PGresult:
        pgconn = self._pgconn
        name = self._names.get(statement)
        if name is None:
            name = f"dbbench_{len(self._names)}".encode()
            prepared = pgconn.prepare(name, numbered(statement).encode())
            if prepared.status != pq.ExecStatus.COMMAND_OK:
                _raise(prepared, pgconn)
            self._names[statement] = name
        result = pgconn.exec_prepared(name, [_text(p) for p in params])
        if result.status not in _OK:
            _raise(result, pgconn)
        return result


class SimpleSession(_Session):
    """Each call one statement text with its values as literals (PQexec)."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        super().__init__(conn)
        self._escaping = pq.Escaping(self._pgconn)
        # %s placeholders filled by bytes formatting (the statements hold no other %).
        self._encoded: dict[str, bytes] = {}

    def _literal(self, value: object) -> bytes:
        if type(value) is int:
            return b"'%d'" % value
        return self._escaping.escape_literal(str(value).encode())

    def _run(self, statement: str, params: list[object]) -> pq.abc.PGresult:
        encoded = self._encoded.get(statement)
        if encoded is None:
            encoded = self._encoded[statement] = statement.encode()
        pgconn = self._pgconn
        result = pgconn.exec_(encoded % tuple([self._literal(p) for p in params]))
        if result.status not in _OK:
            _raise(result, pgconn)
        return result


Session = PreparedSession | SimpleSession


def open_session(conn: psycopg.Connection[Any], *, prepared: bool) -> Session:
    return PreparedSession(conn) if prepared else SimpleSession(conn)
