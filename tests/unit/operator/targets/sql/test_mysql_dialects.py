"""The replication statements' dialects (pure): one per engine, MariaDB's GTID
positions compared as sets, and unsafe user names, secrets, hosts and GTID sets
refused before any statement is built. Each statement executed by real servers:
tests/integration/operator/targets/test_mysql_statements.py."""

from __future__ import annotations

import pytest

from dbbench_operator.targets.sql.mysql_statements import (
    MARIADB,
    MYSQL_84,
    ReplicationSource,
    create_replication_user,
    dialect,
    parse_mariadb_gtid_pos,
)


def test_gtid_subset_refuses_anything_but_a_gtid_set() -> None:
    with pytest.raises(ValueError, match="GTID set"):
        MYSQL_84.gtid_subset("1-2'); DROP TABLE x; --")


@pytest.mark.parametrize(
    ("user", "password"),
    [("repl'--", "pw"), ("repl", "p'w"), ("repl", "p\\w"), ("", "pw"), ("repl", "")],
)
def test_unsafe_names_and_secrets_are_refused(user: str, password: str) -> None:
    with pytest.raises(ValueError, match="not allowed"):
        create_replication_user(user, password)


def test_unsafe_host_is_refused() -> None:
    with pytest.raises(ValueError, match="host"):
        ReplicationSource(host="h'; DROP", port=3306, user="u", password="p")


def test_dialect_by_engine() -> None:
    assert dialect("mysql") is MYSQL_84
    assert dialect("mariadb") is MARIADB
    with pytest.raises(ValueError, match="mongodb"):
        dialect("mongodb")


def test_mariadb_gtid_positions_compare_as_sets() -> None:
    assert parse_mariadb_gtid_pos("1-3-9, 0-1-5") == parse_mariadb_gtid_pos("0-1-5,1-3-9")
    assert parse_mariadb_gtid_pos("") == frozenset()
