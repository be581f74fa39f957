"""External targets: the probe of real MariaDB and MySQL servers (standalone, a
primary and its replica, a refused password). URI parsing:
tests/unit/operator/targets/test_external.py."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from dbbench_operator.targets.external import probe
from dbbench_operator.targets.sql.mysql_replication import (
    Member,
    ReplicationCredentials,
    ensure_replication,
)
from dbbench_operator.targets.sql.session import connect
from tests.fixtures.mariadb import MariaDBServer
from tests.fixtures.mysql import MySQLServer


def _uri(server: MariaDBServer) -> str:
    return f"mariadb://root:{server.root_password}@127.0.0.1:{server.port}/"


@pytest.mark.integration
def test_probe_standalone_mariadb(mariadb: MariaDBServer) -> None:
    result = probe(_uri(mariadb))
    assert result.engine == "mariadb"
    assert result.topology == "standalone"
    session = connect("127.0.0.1", mariadb.port, "root", mariadb.root_password)
    try:
        assert result.server_version == session.query("SELECT VERSION() AS v")[0]["v"]
    finally:
        session.close()
    assert result.endpoint == f"127.0.0.1:{mariadb.port}"


@pytest.mark.integration
def test_probe_sees_primary_and_replica(mariadb_factory: Callable[..., MariaDBServer]) -> None:
    primary = mariadb_factory(server_id=11)
    replica = mariadb_factory(server_id=12, extra_args=["--report-host=127.0.0.1"])
    sessions = [connect("127.0.0.1", s.port, "root", s.root_password) for s in (primary, replica)]
    try:
        for session in sessions:
            session.execute("RESET MASTER")
        members = [
            Member(f"m{i}", "127.0.0.1", s.port, sess)
            for i, (s, sess) in enumerate(zip((primary, replica), sessions, strict=True))
        ]
        creds = ReplicationCredentials("dbbench_repl", "pw-123")
        deadline = time.monotonic() + 30
        while not ensure_replication(members[0], members[1:], creds, "mariadb").ready:
            assert time.monotonic() < deadline, "replication never became ready"
            time.sleep(0.3)
        assert probe(_uri(replica)).topology == "replica"
        assert probe(_uri(primary)).topology == "primaryReplica"
    finally:
        for session in sessions:
            session.close()


@pytest.mark.integration
def test_probe_with_wrong_password_raises(mariadb: MariaDBServer) -> None:
    import mysql.connector  # noqa: PLC0415

    with pytest.raises(mysql.connector.Error):
        probe(f"mysql://root:wrong@127.0.0.1:{mariadb.port}/", timeout_s=5)


@pytest.mark.integration
def test_probe_standalone_mysql(mysql_server: MySQLServer) -> None:
    uri = f"mysql://root:{mysql_server.root_password}@127.0.0.1:{mysql_server.port}/"
    result = probe(uri)
    assert (result.engine, result.topology) == ("mysql", "standalone")
    assert result.server_version.startswith("9.")
    assert result.endpoint == f"127.0.0.1:{mysql_server.port}"
