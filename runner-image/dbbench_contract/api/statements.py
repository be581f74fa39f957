"""`runner.statements`: how the runner sends its SQL (pgbench's `-M simple|prepared`).

simple: each operation is one statement text with its values written in as
literals (PostgreSQL's simple query protocol, MySQL's COM_QUERY): the server
parses and plans it every time. prepared: each connection prepares each
statement once on the server (PostgreSQL Parse/PQprepare, MySQL
COM_STMT_PREPARE) and then only executes it with new values (PQexecPrepared,
COM_STMT_EXECUTE: binary values on MySQL). sysbench's default on MySQL and
benchmark 4's Java client are prepared; pgbench's default is simple.

Unset keeps what each engine's client did before the field existed: PostgreSQL
prepared (psycopg prepares a repeated statement itself), MySQL and MariaDB
simple (mysqlclient, their default library, has no server-side prepared
statements). MongoDB has no statements to prepare: each operation is one
command document; `prepared` is refused when every target is MongoDB and
does not apply to the MongoDB targets of a mixed run.

The rules live here, not in spec.py, so that the spec's list only names them.
"""

from __future__ import annotations

from typing import Any, Literal

from .base import Rule

StatementMode = Literal["simple", "prepared"]

# What each SQL engine's runner did before the field existed (unset keeps it).
ENGINE_DEFAULT: dict[str, StatementMode] = {
    "postgresql": "prepared",
    "mysql": "simple",
    "mariadb": "simple",
}
# The one MySQL/MariaDB client library of the runner with server-side prepared statements.
PREPARING_MYSQL_DRIVER = "mysql-connector-python"

STATEMENTS_DOC = (
    "How the runner sends SQL, as pgbench's -M: simple (the statement text with its "
    "values as literals, parsed and planned by the server every time) or prepared "
    "(each connection prepares each statement once, then executes it with new values; "
    "sysbench's default). Unset: prepared on PostgreSQL, simple on MySQL/MariaDB. "
    "prepared on mysql/mariadb needs mysqlDriver: mysql-connector-python (mysqlclient "
    "cannot prepare). Not applicable to MongoDB (no statements). Recorded in "
    "environment.json (runner.client.statements)."
)


def statement_mode(engine: str, chosen: StatementMode | None) -> StatementMode | None:
    """The mode a target's runner uses: the chosen one, else the engine's; None for
    MongoDB (nothing to prepare)."""
    if engine not in ENGINE_DEFAULT:
        return None
    return chosen or ENGINE_DEFAULT[engine]


def statements_problem(
    engine: str, chosen: StatementMode | None, mysql_driver: str | None
) -> str | None:
    """Why one target's runner cannot honour `chosen`, naming the field and the fix."""
    if chosen != "prepared":
        return None
    if engine == "mongodb":
        return (
            "statements: prepared does not apply to mongodb (each operation is one "
            "command, there is no statement to prepare); leave statements unset"
        )
    if engine in ("mysql", "mariadb") and mysql_driver != PREPARING_MYSQL_DRIVER:
        return (
            f"statements: prepared on {engine} needs mysqlDriver: {PREPARING_MYSQL_DRIVER} "
            f"({mysql_driver or 'mysqlclient'} has no server-side prepared statements); "
            "set mysqlDriver: mysql-connector-python or use statements: simple"
        )
    return None


def _prepares(spec: Any) -> bool:
    return bool(spec.runner.statements == "prepared")


STATEMENT_RULES = (
    Rule(
        cel=(
            "!has(self.runner.statements) || self.runner.statements != 'prepared' || "
            f"(has(self.runner.mysqlDriver) && self.runner.mysqlDriver == "
            f"'{PREPARING_MYSQL_DRIVER}') || "
            "self.targets.all(t, t.engine != 'mysql' && t.engine != 'mariadb')"
        ),
        message=(
            "runner.statements: prepared on mysql/mariadb targets needs runner.mysqlDriver: "
            f"{PREPARING_MYSQL_DRIVER} (mysqlclient, the default, has no server-side "
            "prepared statements); set runner.mysqlDriver: mysql-connector-python or use "
            "runner.statements: simple"
        ),
        field="runner",
        holds=lambda s: (
            not _prepares(s)
            or s.runner.mysql_driver == PREPARING_MYSQL_DRIVER
            or all(t.engine not in ("mysql", "mariadb") for t in s.targets)
        ),
    ),
    Rule(
        cel=(
            "!has(self.runner.statements) || self.runner.statements != 'prepared' || "
            "self.targets.exists(t, t.engine != 'mongodb')"
        ),
        message=(
            "runner.statements: prepared has nothing to prepare on mongodb (each operation "
            "is one command, not a SQL statement); leave runner.statements unset, or add a "
            "mysql, mariadb or postgresql target"
        ),
        field="runner",
        holds=lambda s: not _prepares(s) or any(t.engine != "mongodb" for t in s.targets),
    ),
)
