"""External targets: URI parsing and topology from `hello` (pure). The probe of real
servers: tests/integration/operator/targets/test_external_probe.py."""

from __future__ import annotations

import pytest

from dbbench_operator.targets.external import classify_hello, family_of, parse_uri


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


def test_engine_families_match_uri_schemes() -> None:
    assert [family_of(e) for e in ("mongodb", "mysql", "mariadb", "postgresql")] == [
        "mongodb", "mysql", "mysql", "postgresql",
    ]  # fmt: skip
