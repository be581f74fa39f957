"""Driver and server error text, as the status may show it: the real servers' own
words (MariaDB, a real replica's Last_IO_Error, FerretDB, pymongo against a
closed port), with no host, user or password left. The scrubbing itself:
tests/unit/operator/test_redaction_scrub.py."""

from __future__ import annotations

import time
from typing import Any

import mysql.connector
import psycopg
import pytest

from dbbench_operator.redaction import driver_error
from dbbench_operator.targets.mongodb import client as mongo_client
from dbbench_operator.targets.mongodb.setup import CommandFailedError, UnreachableError
from dbbench_operator.targets.sql.mysql_replication import misconfiguration
from dbbench_operator.targets.sql.mysql_statements import ReplicationSource, dialect
from tests.fixtures.controlplane import free_port
from tests.fixtures.ferretdb import FerretDBServer
from tests.fixtures.mariadb import MariaDBServer
from tests.fixtures.postgres import PostgresServer
from tests.integration.operator.targets.replication_support import CREDS
from tests.integration.operator.targets.test_mariadb_replication import _until_ready, group
from tests.unit.operator.test_redaction_scrub import leaks

__all__ = ["group"]


@pytest.mark.integration
def test_a_refused_mariadb_login_says_its_type_and_code_only(mariadb: MariaDBServer) -> None:
    with pytest.raises(mysql.connector.Error) as caught:
        mysql.connector.connect(host="127.0.0.1", port=mariadb.port, user="dbbench",
                                password="not-the-password", connection_timeout=5)  # fmt: skip
    assert "dbbench" in str(caught.value)  # the driver's own text names the user
    said = driver_error(caught.value)
    assert said == "ProgrammingError code 1045 sqlstate 28000"
    assert leaks(said, "dbbench", "127.0.0.1", mariadb.port, "not-the-password") == []


@pytest.mark.integration
def test_a_postgresql_error_says_its_type_and_sqlstate_only(
    postgres_server: PostgresServer,
) -> None:
    with pytest.raises(psycopg.Error) as caught:
        psycopg.connect(host="127.0.0.1", port=postgres_server.port, user="dbbench",
                        password="not-the-password", dbname="postgres",
                        connect_timeout=5)  # fmt: skip
    assert "dbbench" in str(caught.value)  # libpq's text names the user and the host
    said = driver_error(caught.value)
    assert said == "OperationalError", said  # a refused connection has no SQLSTATE here
    assert leaks(said, "dbbench", "127.0.0.1", postgres_server.port, "not-the-password") == []
    with (
        psycopg.connect(
            host="127.0.0.1",
            port=postgres_server.port,
            user=postgres_server.user,
            password=postgres_server.password,
            dbname="postgres",
            connect_timeout=5,
        ) as conn,
        pytest.raises(psycopg.Error) as missing,
    ):
        conn.execute("SELECT * FROM dbbench_no_such_table")  # fmt: skip
    assert driver_error(missing.value) == "UndefinedTable sqlstate 42P01"


@pytest.mark.integration
def test_a_replicas_io_error_loses_the_user_and_the_source(group: Any) -> None:
    servers, sessions = group
    assert _until_ready(servers, sessions).ready
    replica = sessions[1].inner
    for statement in ("STOP SLAVE", "CHANGE MASTER TO MASTER_PASSWORD='wrong-pw'", "START SLAVE"):
        replica.execute(statement)
    deadline = time.monotonic() + 60
    status: dict[str, Any] = {}
    while time.monotonic() < deadline:
        status = replica.query("SHOW SLAVE STATUS")[0]
        if int(status.get("Last_IO_Errno") or 0):
            break
        time.sleep(0.5)
    raw = str(status["Last_IO_Error"])
    assert CREDS.user in raw, raw  # the server names the replication user and source
    source = ReplicationSource("127.0.0.1", servers[0].port, CREDS.user, CREDS.password)
    said = misconfiguration(status, dialect("mariadb"), source)
    assert "IO error 1045" in said, said
    assert leaks(said, CREDS.user, "127.0.0.1", servers[0].port, "wrong-pw",
                 CREDS.password) == [], said  # fmt: skip


@pytest.mark.integration
def test_mongodb_admin_errors_carry_no_host_or_user(ferretdb: FerretDBServer) -> None:
    closed = free_port()
    client = mongo_client.connect(f"127.0.0.1:{closed}", username="dbbench", password="pw-1",
                                  timeout_ms=500)  # fmt: skip
    with pytest.raises(UnreachableError) as unreachable:
        client.admin_command({"ping": 1})
    client.close()
    assert leaks(str(unreachable.value), "127.0.0.1", closed, "dbbench", "pw-1") == []
    assert "ServerSelectionTimeoutError" in str(unreachable.value)
    server = mongo_client.connect(f"127.0.0.1:{ferretdb.port}", username=None, password=None)
    with pytest.raises(CommandFailedError) as refused:
        server.admin_command({"noSuchCommand": 1})
    server.close()
    assert "OperationFailure" in str(refused.value)
    assert refused.value.code != 0
    assert leaks(str(refused.value), "127.0.0.1", ferretdb.port) == []
