"""What the MySQL and PostgreSQL setups share: the session their statements run
on, and how the statements check the values they carry.

The statements are pure text (mysql_statements, postgres_statements). The
setup (mysql_replication, semi_sync, postgres_replication, external) runs them
on a `SqlSession`: an autocommit connection the operator opens with
mysql-connector (sql_session) or psycopg (pg_session), and the tests open on
real MySQL, MariaDB and PostgreSQL servers. Names and secrets are validated
rather than escaped: the operator generates them (pod names, `dbbench_repl`,
URL-safe tokens), and a value that needs quoting is a bug to report, not text
to smuggle into SQL or into a libpq connection string.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

HOST = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$")
SECRET = re.compile(r"^[A-Za-z0-9._~+=/@:^!#%-]{1,128}$")


class SqlSession(Protocol):
    """The two calls the setup needs from a connection (autocommit on)."""

    def execute(self, sql: str) -> None: ...

    def query(self, sql: str) -> list[dict[str, Any]]: ...


class ConnectionSession:
    """A `SqlSession` over one driver connection; the engines' modules say how it
    executes and queries (sql_session.ConnectorSession, pg_session.PsycopgSession)."""

    def __init__(self, connection: Any) -> None:
        self._connection = connection

    def close(self) -> None:
        self._connection.close()


def scalar(session: SqlSession, sql: str) -> Any:
    """The first column of the first row; None when there is no row."""
    rows = session.query(sql)
    return next(iter(rows[0].values())) if rows else None


def checked(pattern: re.Pattern[str], value: str, what: str) -> str:
    if not pattern.match(value):
        raise ValueError(f"{what} {value!r} has characters that are not allowed")
    return value


@dataclass(frozen=True)
class ReplicationLogin:
    """Where a replica (a standby) reads from, and as whom; checked when made."""

    # The engine's rule for user names.
    USER: ClassVar[re.Pattern[str]]

    host: str
    port: int
    user: str
    password: str

    def __post_init__(self) -> None:
        checked(HOST, self.host, "host")
        checked(self.USER, self.user, "user")
        checked(SECRET, self.password, "password")
        if not 0 < self.port < 65536:
            raise ValueError(f"port {self.port} out of range")
