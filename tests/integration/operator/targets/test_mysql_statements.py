"""The replication statements, executed by real servers: MySQL 9.7 and MariaDB 10.11.

Each statement the dialects hold is sent to a real server and its effect is
read back through the server's own status (never by comparing the code's
text with a copy of it). The full setup, semi-sync included, runs in
test_mysql_replication.py / test_mariadb_replication.py; here each statement
is checked on its own. The refusals, which are pure:
tests/unit/operator/targets/sql/test_mysql_dialects.py.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import pytest

from dbbench_operator.targets.sql.mysql_statements import (
    MARIADB,
    MYSQL_84,
    PRIMARY_READ_ONLY_QUERY,
    Dialect,
    ReplicationSource,
    create_replication_user,
    dialect,
    grant_replication,
    parse_mariadb_gtid_pos,
    replication_grant_check,
    user_exists,
)
from dbbench_operator.targets.sql.session import ConnectorSession, connect
from tests.fixtures.mariadb import MariaDBServer
from tests.fixtures.mysql import MySQLServer

# A name as the operator builds it: long, dotted, unresolvable here (the
# replica is never started, so nothing tries to reach it).
SOURCE = ReplicationSource(
    host="bench-db-0a1b2c-0.bench-db-0a1b2c.ns.svc.cluster.local",
    port=3306,
    user="dbbench_repl",
    password="Zx9-pw.~+=/@:^!#%",
)


@pytest.fixture(params=["mysql", "mariadb"])
def engine_session(request: pytest.FixtureRequest) -> Iterator[tuple[Dialect, ConnectorSession]]:
    """A root session on the session's real server of that engine, with the dialect."""
    fixture = "mysql_server" if request.param == "mysql" else "mariadb"
    server: MySQLServer | MariaDBServer = request.getfixturevalue(fixture)
    session = connect("127.0.0.1", server.port, "root", server.root_password)
    try:
        yield dialect(request.param), session
    finally:
        session.close()


def _scalar(session: ConnectorSession, sql: str) -> Any:
    rows = session.query(sql)
    return next(iter(rows[0].values())) if rows else None


@pytest.mark.integration
def test_replication_user_is_created_found_and_granted(
    engine_session: tuple[Dialect, ConnectorSession],
) -> None:
    _, session = engine_session
    user = f"repl_{secrets.token_hex(4)}"
    try:
        assert int(_scalar(session, user_exists(user))) == 0
        session.execute(create_replication_user(user, SOURCE.password))
        session.execute(create_replication_user(user, SOURCE.password))  # IF NOT EXISTS
        assert int(_scalar(session, user_exists(user))) == 1
        assert _scalar(session, replication_grant_check(user)) == "N"
        session.execute(grant_replication(user))
        assert _scalar(session, replication_grant_check(user)) == "Y"
        grants = " ".join(str(next(iter(r.values()))) for r in session.query(
            f"SHOW GRANTS FOR '{user}'@'%'"
        ))  # fmt: skip
        assert "REPLICATION SLAVE" in grants
    finally:
        session.execute(f"DROP USER IF EXISTS '{user}'@'%'")


@pytest.mark.integration
def test_change_source_is_what_the_status_then_shows(
    engine_session: tuple[Dialect, ConnectorSession],
) -> None:
    sql, session = engine_session
    assert session.query(sql.replica_status) == []  # not a replica yet
    try:
        session.execute(sql.change_source(SOURCE))
        status = session.query(sql.replica_status)[0]
        assert (status[sql.source_host], int(status[sql.source_port])) == (SOURCE.host, 3306)
        assert status[sql.source_user] == SOURCE.user
        assert (status[sql.io_running], status[sql.sql_running]) == ("No", "No")
        if sql.flavor == "mysql":
            assert int(status["Auto_Position"]) == 1
            assert int(status["Get_Source_public_key"]) == 1
        else:
            assert status["Using_Gtid"] == "Slave_Pos"
        assert sql.lag in status
    finally:
        session.execute(sql.stop_replica)
        session.execute("RESET REPLICA ALL" if sql.flavor == "mysql" else "RESET SLAVE ALL")
    assert session.query(sql.replica_status) == []


@pytest.mark.integration
def test_read_only_switches(engine_session: tuple[Dialect, ConnectorSession]) -> None:
    sql, session = engine_session
    try:
        session.execute(sql.read_only_on)
        assert int(_scalar(session, sql.read_only_query)) == 1
        assert int(_scalar(session, PRIMARY_READ_ONLY_QUERY)) == 1  # super_read_only implies it
        for statement in sql.writable_on:
            session.execute(statement)
        assert int(_scalar(session, sql.read_only_query)) == 0
        assert int(_scalar(session, PRIMARY_READ_ONLY_QUERY)) == 0
    finally:
        for statement in sql.writable_on:
            session.execute(statement)


@pytest.mark.integration
def test_gtid_position_and_subset_on_mysql(mysql_server: MySQLServer) -> None:
    session = connect("127.0.0.1", mysql_server.port, "root", mysql_server.root_password)
    try:
        session.execute("CREATE DATABASE IF NOT EXISTS gtid_probe")  # one GTID at least
        own = str(_scalar(session, MYSQL_84.gtid_position_query))
        assert own
        assert _scalar(session, MYSQL_84.replica_gtid_query) == own
        assert int(_scalar(session, MYSQL_84.gtid_subset(own))) == 1
        foreign = "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-77"
        assert int(_scalar(session, MYSQL_84.gtid_subset(f"{own},\n{foreign}"))) == 0
        session.execute("DROP DATABASE gtid_probe")
    finally:
        session.close()


@pytest.mark.integration
def test_gtid_positions_on_mariadb(mariadb: MariaDBServer) -> None:
    session = connect("127.0.0.1", mariadb.port, "root", mariadb.root_password)
    try:
        session.execute("CREATE DATABASE IF NOT EXISTS gtid_probe")
        position = str(_scalar(session, MARIADB.gtid_position_query))
        domains = parse_mariadb_gtid_pos(position)
        assert domains
        assert all(len(gtid.split("-")) == 3 for gtid in domains)
        session.execute("DROP DATABASE gtid_probe")
    finally:
        session.close()
