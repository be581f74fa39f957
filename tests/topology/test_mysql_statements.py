"""Exact statement text: MySQL 8.4 syntax and the MariaDB equivalents."""

from __future__ import annotations

import pytest

from dbbench_operator.topology.mysql_statements import (
    MARIADB,
    MYSQL_84,
    ReplicationSource,
    create_replication_user,
    dialect,
    grant_replication,
    parse_mariadb_gtid_pos,
)

SOURCE = ReplicationSource(
    host="bench-db-0a1b2c-0.bench-db-0a1b2c.ns.svc.cluster.local",
    port=3306,
    user="dbbench_repl",
    password="Zx9-pw",
)


def test_mysql_84_change_source_uses_gtid_auto_position_and_public_key() -> None:
    assert MYSQL_84.change_source(SOURCE) == (
        "CHANGE REPLICATION SOURCE TO "
        "SOURCE_HOST='bench-db-0a1b2c-0.bench-db-0a1b2c.ns.svc.cluster.local', "
        "SOURCE_PORT=3306, SOURCE_USER='dbbench_repl', SOURCE_PASSWORD='Zx9-pw', "
        "SOURCE_AUTO_POSITION=1, GET_SOURCE_PUBLIC_KEY=1"
    )


def test_mysql_84_replica_control_and_guards() -> None:
    assert MYSQL_84.start_replica == "START REPLICA"
    assert MYSQL_84.stop_replica == "STOP REPLICA"
    assert MYSQL_84.replica_status == "SHOW REPLICA STATUS"
    assert MYSQL_84.read_only_on == "SET PERSIST super_read_only=ON"
    assert MYSQL_84.io_running == "Replica_IO_Running"
    assert MYSQL_84.lag == "Seconds_Behind_Source"


def test_mysql_84_semi_sync_plugins_and_switches() -> None:
    assert MYSQL_84.semisync_source_plugin == (
        "INSTALL PLUGIN rpl_semi_sync_source SONAME 'semisync_source.so'"
    )
    assert MYSQL_84.semisync_replica_plugin == (
        "INSTALL PLUGIN rpl_semi_sync_replica SONAME 'semisync_replica.so'"
    )
    # Persisted (mysqld-auto.cnf): a restarted pod keeps them (issue 8, defect 6).
    assert MYSQL_84.semisync_wanted("source", 60000) == {
        "rpl_semi_sync_source_enabled": "ON",
        "rpl_semi_sync_source_timeout": "60000",
        "rpl_semi_sync_source_wait_no_replica": "OFF",
    }
    assert MYSQL_84.semisync_wanted("replica", 60000) == {"rpl_semi_sync_replica_enabled": "ON"}
    assert MYSQL_84.set_variable("rpl_semi_sync_source_enabled", "ON") == (
        "SET PERSIST rpl_semi_sync_source_enabled=ON"
    )
    assert MYSQL_84.semisync_variables("source") == (
        "SHOW GLOBAL VARIABLES LIKE 'rpl_semi_sync_source_%'"
    )
    assert MYSQL_84.semisync_status() == "SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_source_%'"
    assert MYSQL_84.restart_io_thread == ("STOP REPLICA IO_THREAD", "START REPLICA IO_THREAD")


def test_mysql_84_caught_up_check_compares_gtid_sets() -> None:
    primary = "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-77,\n4f0a-tagged:fast:1-3"
    assert MYSQL_84.gtid_position_query == "SELECT @@GLOBAL.gtid_executed AS gtid"
    assert MYSQL_84.gtid_subset(primary) == (
        "SELECT GTID_SUBSET('3e11fa47-71ca-11e1-9e33-c80aa9429562:1-77,4f0a-tagged:fast:1-3', "
        "@@GLOBAL.gtid_executed) AS caught_up"
    )
    with pytest.raises(ValueError, match="GTID set"):
        MYSQL_84.gtid_subset("1-2'); DROP TABLE x; --")


def test_replication_user_statements() -> None:
    assert create_replication_user("dbbench_repl", "Zx9-pw") == (
        "CREATE USER IF NOT EXISTS 'dbbench_repl'@'%' IDENTIFIED BY 'Zx9-pw'"
    )
    assert grant_replication("dbbench_repl") == (
        "GRANT REPLICATION SLAVE ON *.* TO 'dbbench_repl'@'%'"
    )


def test_mariadb_change_master_uses_slave_pos() -> None:
    assert MARIADB.change_source(SOURCE) == (
        "CHANGE MASTER TO "
        "MASTER_HOST='bench-db-0a1b2c-0.bench-db-0a1b2c.ns.svc.cluster.local', "
        "MASTER_PORT=3306, MASTER_USER='dbbench_repl', MASTER_PASSWORD='Zx9-pw', "
        "MASTER_USE_GTID=slave_pos"
    )
    assert MARIADB.start_replica == "START SLAVE"
    assert MARIADB.read_only_on == "SET GLOBAL read_only=ON"
    assert MARIADB.semisync_source_plugin is None
    # No SET PERSIST in MariaDB: the chart's role flags persist these.
    assert MARIADB.set_variable("rpl_semi_sync_master_enabled", "ON") == (
        "SET GLOBAL rpl_semi_sync_master_enabled=ON"
    )
    assert MARIADB.semisync_wanted("replica", 1) == {"rpl_semi_sync_slave_enabled": "ON"}
    assert MARIADB.gtid_position_query == "SELECT @@GLOBAL.gtid_binlog_pos AS gtid"


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
