"""The two MySQL/MariaDB client libraries behind one small interface.

`mysqlclient` (MySQLdb: the C client library libmariadb/libmysqlclient with a
thin Python binding) is the default; it spends about a fifth of the client CPU
per point read that mysql-connector-python does (pure Python, or its C
extension where OpenSSL >= 3.2 lets it load). Both are DB-API 2 drivers with
the %s paramstyle over the text protocol, so statements and parameters are the
same; they differ in how they connect, where the error number is, and how they
describe themselves. Either library is imported only when chosen.

Both connect with CLIENT_FOUND_ROWS: an UPDATE's row count is then the rows it
matched, not only those whose values changed, so an update that found its row
is never taken for one that found nothing (an error, `must_find`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

from dbbench_runner.config import ConfigError, MySQLDriverName

# Returned as bytes by the mysqlclient driver (see MySQLdbClient.__init__).
RAW_FIELD_TYPES = ("DATE", "DATETIME", "TIMESTAMP", "TIME", "DECIMAL", "NEWDECIMAL")


class DriverUnavailableError(ConfigError):
    """The chosen client library is not installed; the message names the setting."""


@dataclass(frozen=True)
class ConnectArgs:
    host: str
    port: int
    user: str
    password: str
    database: str | None
    timeout: float


class MySQLClient(Protocol):
    """What the MySQL driver needs from a client library."""

    errors: tuple[type[BaseException], ...]

    def connect(self, args: ConnectArgs) -> Any: ...

    def errno(self, exc: BaseException) -> int | None: ...

    def fetch(self, conn: Any, cursor: Any, statement: str, params: list[object]) -> int:
        """Run a SELECT, fetch every row into Python values; the row count."""

    def describe(self) -> dict[str, str]:
        """driver, version, implementation: recorded in environment.json."""


class ConnectorClient:
    """mysql-connector-python: its C extension where it loads, else pure Python."""

    def __init__(self) -> None:
        import mysql.connector  # noqa: PLC0415 - imported only when chosen

        self._module = mysql.connector
        self._found_rows = mysql.connector.constants.ClientFlag.FOUND_ROWS
        self.errors: tuple[type[BaseException], ...] = (mysql.connector.Error,)

    def connect(self, args: ConnectArgs) -> Any:
        kwargs: dict[str, Any] = {
            "host": args.host,
            "port": args.port,
            "user": args.user,
            "password": args.password,
            # The C extension takes whole seconds only (a float raises TypeError);
            # round up so that a sub-second timeout does not become 0.
            "connection_timeout": math.ceil(args.timeout),
            "autocommit": True,
            "use_pure": not self._module.HAVE_CEXT,
            "client_flags": [self._found_rows],
        }
        if args.database is not None:
            kwargs["database"] = args.database
        return self._module.connect(**kwargs)

    def errno(self, exc: BaseException) -> int | None:
        value = getattr(exc, "errno", None)
        return value if isinstance(value, int) else None

    def fetch(self, conn: Any, cursor: Any, statement: str, params: list[object]) -> int:
        del conn
        cursor.execute(statement, params)
        return len(cursor.fetchall())

    def describe(self) -> dict[str, str]:
        return {
            "driver": "mysql-connector-python",
            "version": str(self._module.__version__),
            "implementation": "C extension" if self._module.HAVE_CEXT else "pure Python",
        }


class MySQLdbClient:
    """mysqlclient: MySQLdb over the C client library."""

    def __init__(self) -> None:
        try:
            import MySQLdb  # noqa: PLC0415 - imported only when chosen
        except ImportError as exc:
            raise DriverUnavailableError(
                f"mysqlDriver: mysqlclient cannot be imported here ({exc}); install "
                "mysqlclient==2.3.1 or set mysqlDriver: mysql-connector-python"
            ) from exc
        from MySQLdb import converters  # noqa: PLC0415
        from MySQLdb.constants import CLIENT, FIELD_TYPE  # noqa: PLC0415

        self._module = MySQLdb
        self._found_rows = CLIENT.FOUND_ROWS
        self.errors: tuple[type[BaseException], ...] = (MySQLdb.Error,)
        # Dates, times and decimals arrive as the server's bytes: every row and
        # column is still read into Python values, but parsing them (a Python
        # function per value in MySQLdb) is the application's cost, not the
        # database's; docs/decisions.md. Ints and strings keep their C fast paths.
        self._conv = dict(converters.conversions)
        for field_type in RAW_FIELD_TYPES:
            self._conv[getattr(FIELD_TYPE, field_type)] = bytes
        # Statement texts are few and built once; their bytes are cached here.
        self._encoded: dict[str, bytes] = {}

    def connect(self, args: ConnectArgs) -> Any:
        kwargs: dict[str, Any] = {
            "host": args.host,
            "port": args.port,
            "user": args.user,
            "password": args.password,
            "connect_timeout": math.ceil(args.timeout),
            "autocommit": True,
            "charset": "utf8mb4",
            "conv": self._conv,
            "client_flag": self._found_rows,
        }
        if args.database is not None:
            kwargs["database"] = args.database
        return self._module.connect(**kwargs)

    def errno(self, exc: BaseException) -> int | None:
        first = exc.args[0] if exc.args else None
        return first if isinstance(first, int) else None

    def fetch(self, conn: Any, cursor: Any, statement: str, params: list[object]) -> int:
        """What Cursor.execute + fetchall do (escape with the connection's literal(),
        one COM_QUERY, store and convert every row) minus the cursor's Python
        bookkeeping, which profiled at about a third of the client CPU per point read."""
        del cursor
        encoded = self._encoded.get(statement)
        if encoded is None:
            encoded = self._encoded[statement] = statement.encode()
        literal = conn.literal
        # int keys (most reads) formatted directly: literal() is three Python calls.
        values = tuple([b"%d" % p if type(p) is int else literal(p) for p in params])
        conn.query(encoded % values)
        result = conn.store_result()
        return 0 if result is None else len(result.fetch_row(0))

    def describe(self) -> dict[str, str]:
        library = self._module._mysql.get_client_info()
        return {
            "driver": "mysqlclient",
            "version": ".".join(str(p) for p in self._module.version_info[:3]),
            "implementation": f"C client library {library}",
        }


def client_for(name: MySQLDriverName) -> MySQLClient:
    if name == "mysqlclient":
        return MySQLdbClient()
    return ConnectorClient()
