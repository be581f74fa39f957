"""A database's refusal, as the operator explains it: the real servers' own errors
(MySQL 9.7, MariaDB, PostgreSQL) turned into a reason, what it means and the
likely fix, with no user, host, address or password of the driver's text.
MongoDB's codes: tests/unit/operator/targets/test_refusals_mongodb.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mysql.connector
import psycopg
import pytest

from dbbench_local.mysqld import MySQLServer
from dbbench_operator.targets import refusals
from dbbench_operator.targets.refusals import Logs, explain
from tests.fixtures.mariadb import MariaDBServer, free_port
from tests.fixtures.postgres import PostgresServer
from tests.unit.operator.targets.test_refusals_mongodb import HINT, LOGS
from tests.unit.operator.test_redaction_scrub import leaks


def _mysql_refusal(**connect: Any) -> mysql.connector.Error:
    with pytest.raises(mysql.connector.Error) as caught:
        mysql.connector.connect(host="127.0.0.1", connection_timeout=5, **connect)
    return caught.value


@pytest.mark.integration
def test_mysql_whose_users_were_not_created_refuses_the_operator(
    mysql_factory: Callable[..., list[MySQLServer]],
) -> None:
    """What a first start that stopped after `mysqld --initialize` leaves: root@localhost
    only. From a pod's address that is 1130 (no account for the host); from loopback,
    which MySQL matches with `localhost`, 1045. Both are explained alike."""
    (server,) = mysql_factory([1])
    conn = mysql.connector.connect(**server.connect_args())
    conn.cursor().execute("DROP USER 'root'@'%'")
    conn.close()
    error = _mysql_refusal(port=server.port, user="root", password=server.root_password)
    refusal = explain("mysql", error, logs=LOGS)
    assert refusal.reason == refusals.ACCESS_DENIED
    assert "(MySQL error 1045)" in refusal.message
    assert "the server's users were not created" in refusal.message
    assert "credentials Secret does not match" in refusal.message
    assert refusal.message.endswith(f"look at the server's first start in its log: {HINT}")
    assert leaks(refusal.message, server.root_password, "127.0.0.1", server.port, "root@") == []
    # The same from another host: the connector's own exception for errno 1130.
    host = mysql.connector.errors.DatabaseError(
        msg="Host '10.244.0.9' is not allowed to connect to this MySQL server", errno=1130
    )
    refusal = explain("mysql", host, logs=LOGS)
    assert refusal.reason == refusals.HOST_NOT_ALLOWED
    assert refusal.message.startswith(
        "the server has no user the operator may log in as from its address (MySQL error 1130): "
        "the server's users were not created"
    )
    assert "10.244.0.9" not in refusal.message


@pytest.mark.integration
def test_mariadb_refusals_say_what_they_mean(mariadb: MariaDBServer) -> None:
    denied = _mysql_refusal(port=mariadb.port, user="root", password="not-the-password")
    refusal = explain("mariadb", denied, logs=LOGS)
    assert refusal.reason == refusals.ACCESS_DENIED
    assert "refused the operator's user name and password (MariaDB error 1045)" in refusal.message
    assert HINT in refusal.message
    assert leaks(refusal.message, "not-the-password", "127.0.0.1", mariadb.port) == []

    unknown = _mysql_refusal(port=mariadb.port, user="root", password=mariadb.root_password,
                             database="no_such_db")  # fmt: skip
    refusal = explain("mariadb", unknown, secret_field="spec.targets[0].external.uriSecretRef")
    assert refusal.reason == refusals.UNKNOWN_DATABASE
    assert "(MariaDB error 1049)" in refusal.message
    assert refusal.message.endswith(
        "create the database or name an existing one in the URI of "
        "spec.targets[0].external.uriSecretRef"
    )
    assert "no_such_db" not in refusal.message

    closed = _mysql_refusal(port=free_port(), user="root", password="x")  # nothing listens
    refusal = explain("mariadb", closed, logs=LOGS)
    assert refusal.reason == refusals.UNREACHABLE
    assert "(MariaDB error 2003)" in refusal.message


def _pg_refusal(server: PostgresServer, **connect: Any) -> psycopg.Error:
    args = {"host": "127.0.0.1", "port": server.port, "user": server.user,
            "password": server.password, "dbname": "postgres", "connect_timeout": 5,
            **connect}  # fmt: skip
    with pytest.raises(psycopg.Error) as caught:
        psycopg.connect(**args)
    return caught.value


@pytest.mark.integration
def test_postgresql_refusals_say_what_they_mean(postgres_server: PostgresServer) -> None:
    """libpq reports a refused connection without a SQLSTATE: the server's words pick it."""
    logs = Logs("team-a", "run-db-postgresql-0", "postgresql")
    cases = [
        (refusals.ACCESS_DENIED, {"password": "not-the-password"}, "SQLSTATE 28P01"),
        # SCRAM says the same of a role that does not exist (it tells no one which).
        (refusals.ACCESS_DENIED, {"user": "no_such_role"}, "SQLSTATE 28P01"),
        (refusals.UNKNOWN_DATABASE, {"dbname": "no_such_db"}, "SQLSTATE 3D000"),
    ]
    for reason, connect, said in cases:
        error = _pg_refusal(postgres_server, **connect)
        refusal = explain("postgresql", error, logs=logs)
        assert refusal.reason == reason, (connect, refusal)
        assert f"(PostgreSQL {said})" in refusal.message
        assert "kubectl logs -n team-a run-db-postgresql-0 -c postgresql" in refusal.message
        assert leaks(refusal.message, "not-the-password", "no_such_role", "no_such_db",
                     "127.0.0.1", postgres_server.port) == []  # fmt: skip
