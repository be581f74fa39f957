"""External targets: URI parsing (pure) and a real MariaDB probe."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from dbbench_operator.targets.external import classify_hello, family_of, parse_uri, probe
from dbbench_operator.targets.sql.mysql_replication import (
    Member,
    ReplicationCredentials,
    ensure_replication,
)
from dbbench_operator.targets.sql.session import connect
from tests.fixtures.mariadb import MariaDBServer
from tests.fixtures.mysql import MySQLServer


def test_mongodb_seed_list_with_credentials_and_options() -> None:
    uri = parse_uri(
        "mongodb://bench%40ops:p%3Ass@db-0.example:27018,db-1.example,[::1]:27019/app"
        "?replicaSet=rs0&authSource=admin"
    )
    assert uri.family == "mongodb"
    assert uri.hosts == (("db-0.example", 27018), ("db-1.example", 27017), ("::1", 27019))
    assert (uri.username, uri.password, uri.database) == ("bench@ops", "p:ss", "app")
    assert uri.options == {"replicaSet": "rs0", "authSource": "admin"}
    assert uri.endpoint == "db-0.example:27018,db-1.example:27017,::1:27019"
    assert "p:ss" not in repr(uri)


def test_mysql_and_mariadb_uris() -> None:
    uri = parse_uri("mysql://root:secret@db.example/bench")
    assert (uri.family, uri.hosts, uri.database) == ("mysql", (("db.example", 3306),), "bench")
    assert parse_uri("mariadb://u@h:3307").hosts == (("h", 3307),)
    assert parse_uri("mongodb://h?directConnection=true").options == {"directConnection": "true"}


def test_postgresql_uris() -> None:
    uri = parse_uri("postgresql://bench:p%40ss@db.example/app?sslmode=disable")
    assert (uri.family, uri.hosts, uri.database) == ("postgresql", (("db.example", 5432),), "app")
    assert (uri.username, uri.password, uri.options) == ("bench", "p@ss", {"sslmode": "disable"})
    assert "p@ss" not in repr(uri)
    assert parse_uri("postgres://u@h:5433").hosts == (("h", 5433),)


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("cassandra://h/db", "scheme"),
        ("postgresql://a,b/db", "exactly one host"),
        ("mongodb:///db", "no host"),
        ("mysql://a,b/db", "exactly one host"),
        ("mysql://h:port/db", "invalid port"),
        ("h:27017", "scheme"),
    ],
)
def test_bad_uris_are_refused(uri: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_uri(uri)


def test_mongodb_topology_from_hello() -> None:
    assert classify_hello({"isWritablePrimary": True, "msg": "isdbgrid"}) == "sharded"
    assert classify_hello({"isWritablePrimary": True, "setName": "rs0"}) == "replicaSet"
    assert classify_hello({"isWritablePrimary": True}) == "standalone"


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


def test_engine_families_match_uri_schemes() -> None:
    assert [family_of(e) for e in ("mongodb", "mysql", "mariadb", "postgresql")] == [
        "mongodb", "mysql", "mysql", "postgresql",
    ]  # fmt: skip
