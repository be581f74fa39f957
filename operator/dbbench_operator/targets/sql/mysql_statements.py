"""Exact SQL for replication setup: MySQL 8.4 and MariaDB (10.11+/11.x) dialects.

Pure: values in, statement text out; names and secrets validated, not escaped
(sql_base).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar, Literal

from dbbench_operator.targets.sql.base import SECRET, ReplicationLogin, checked

Flavor = Literal["mysql", "mariadb"]
_USER = re.compile(r"^[A-Za-z0-9_]{1,32}$")
_GTID_SET = re.compile(r"^[A-Za-z0-9_:,\-\s]*$")


@dataclass(frozen=True)
class ReplicationSource(ReplicationLogin):
    """Where a replica reads from and as whom."""

    USER: ClassVar[re.Pattern[str]] = _USER


def create_replication_user(user: str, password: str) -> str:
    checked(_USER, user, "user")
    checked(SECRET, password, "password")
    return f"CREATE USER IF NOT EXISTS '{user}'@'%' IDENTIFIED BY '{password}'"


def grant_replication(user: str) -> str:
    # The privilege keeps its historical name in MySQL 8.4 and MariaDB 11.
    return f"GRANT REPLICATION SLAVE ON *.* TO '{checked(_USER, user, 'user')}'@'%'"


PRIMARY_READ_ONLY_QUERY = "SELECT @@GLOBAL.read_only AS ro"


def user_exists(user: str) -> str:
    checked(_USER, user, "user")
    return f"SELECT COUNT(*) AS n FROM mysql.user WHERE User = '{user}' AND Host = '%'"


def replication_grant_check(user: str) -> str:
    checked(_USER, user, "user")
    return f"SELECT Repl_slave_priv AS granted FROM mysql.user WHERE User = '{user}' AND Host = '%'"


@dataclass(frozen=True)
class Dialect:
    """Statements and status column names of one engine."""

    flavor: Flavor
    start_replica: str
    stop_replica: str
    replica_status: str
    read_only_query: str  # the replica's guard (super_read_only on MySQL)
    read_only_on: str
    writable_on: tuple[str, ...]  # lifts read-only on the primary
    semisync_source_plugin: str | None
    semisync_replica_plugin: str | None
    restart_io_thread: tuple[str, ...]
    # SHOW ... STATUS column names
    io_running: str
    sql_running: str
    source_host: str
    source_port: str
    source_user: str
    lag: str

    def change_source(self, source: ReplicationSource) -> str:
        if self.flavor == "mysql":
            return (
                f"CHANGE REPLICATION SOURCE TO SOURCE_HOST='{source.host}', "
                f"SOURCE_PORT={source.port}, SOURCE_USER='{source.user}', "
                f"SOURCE_PASSWORD='{source.password}', SOURCE_AUTO_POSITION=1, "
                "GET_SOURCE_PUBLIC_KEY=1"
            )
        return (
            f"CHANGE MASTER TO MASTER_HOST='{source.host}', MASTER_PORT={source.port}, "
            f"MASTER_USER='{source.user}', MASTER_PASSWORD='{source.password}', "
            "MASTER_USE_GTID=slave_pos"
        )

    def semisync_prefix(self, role: Literal["source", "replica"]) -> str:
        """`rpl_semi_sync_source_` (MySQL) or `rpl_semi_sync_master_` (MariaDB)..."""
        if self.flavor == "mysql":
            return f"rpl_semi_sync_{role}_"
        return "rpl_semi_sync_master_" if role == "source" else "rpl_semi_sync_slave_"

    def semisync_variables(self, role: Literal["source", "replica"]) -> str:
        """Rows (Variable_name, Value) of one side's variables; none when not installed."""
        return f"SHOW GLOBAL VARIABLES LIKE '{self.semisync_prefix(role)}%'"

    def semisync_wanted(
        self, role: Literal["source", "replica"], timeout_ms: int
    ) -> dict[str, str]:
        """Variable -> value for one side of semi-sync under durability strict."""
        prefix = self.semisync_prefix(role)
        if role == "replica":
            return {f"{prefix}enabled": "ON"}
        no_replica = "wait_no_replica" if self.flavor == "mysql" else "wait_no_slave"
        return {
            f"{prefix}enabled": "ON",
            f"{prefix}timeout": str(timeout_ms),
            f"{prefix}{no_replica}": "OFF",
        }

    def set_variable(self, name: str, value: str) -> str:
        """MySQL persists (mysqld-auto.cnf); MariaDB has no SET PERSIST: the chart's
        role flags persist its settings (replication_flags.py)."""
        if not re.match(r"^[a-z_]+$", name) or not re.match(r"^[A-Za-z0-9]+$", value):
            raise ValueError(f"variable {name}={value} has characters that are not allowed")
        scope = "PERSIST" if self.flavor == "mysql" else "GLOBAL"
        return f"SET {scope} {name}={value}"

    def semisync_status(self) -> str:
        """The primary's semi-sync counters (status, clients, yes_tx, no_tx...)."""
        return f"SHOW GLOBAL STATUS LIKE '{self.semisync_prefix('source').capitalize()}%'"

    @property
    def gtid_position_query(self) -> str:
        """The primary's position that a caught-up replica must contain."""
        if self.flavor == "mysql":
            return "SELECT @@GLOBAL.gtid_executed AS gtid"
        return "SELECT @@GLOBAL.gtid_binlog_pos AS gtid"

    @property
    def replica_gtid_query(self) -> str:
        if self.flavor == "mysql":
            return "SELECT @@GLOBAL.gtid_executed AS gtid"
        return "SELECT @@GLOBAL.gtid_slave_pos AS gtid"

    def gtid_subset(self, primary_set: str) -> str:
        """MySQL only: does this server's executed set contain the primary's?"""
        checked(_GTID_SET, primary_set, "GTID set")
        compact = re.sub(r"\s+", "", primary_set)
        return f"SELECT GTID_SUBSET('{compact}', @@GLOBAL.gtid_executed) AS caught_up"


MYSQL_84 = Dialect(
    flavor="mysql",
    start_replica="START REPLICA",
    stop_replica="STOP REPLICA",
    replica_status="SHOW REPLICA STATUS",
    read_only_query="SELECT @@GLOBAL.super_read_only AS ro",
    # Persisted: a restarted replica must not come back writable.
    read_only_on="SET PERSIST super_read_only=ON",
    writable_on=("SET GLOBAL super_read_only=OFF", "SET GLOBAL read_only=OFF"),
    semisync_source_plugin="INSTALL PLUGIN rpl_semi_sync_source SONAME 'semisync_source.so'",
    semisync_replica_plugin="INSTALL PLUGIN rpl_semi_sync_replica SONAME 'semisync_replica.so'",
    restart_io_thread=("STOP REPLICA IO_THREAD", "START REPLICA IO_THREAD"),
    io_running="Replica_IO_Running",
    sql_running="Replica_SQL_Running",
    source_host="Source_Host",
    source_port="Source_Port",
    source_user="Source_User",
    lag="Seconds_Behind_Source",
)

MARIADB = Dialect(
    flavor="mariadb",
    start_replica="START SLAVE",
    stop_replica="STOP SLAVE",
    replica_status="SHOW SLAVE STATUS",
    read_only_query="SELECT @@GLOBAL.read_only AS ro",
    read_only_on="SET GLOBAL read_only=ON",  # persisted by the chart's --read-only flag
    writable_on=("SET GLOBAL read_only=OFF",),
    # Semi-sync is built into the server since MariaDB 10.3: nothing to install.
    semisync_source_plugin=None,
    semisync_replica_plugin=None,
    restart_io_thread=("STOP SLAVE IO_THREAD", "START SLAVE IO_THREAD"),
    io_running="Slave_IO_Running",
    sql_running="Slave_SQL_Running",
    source_host="Master_Host",
    source_port="Master_Port",
    source_user="Master_User",
    lag="Seconds_Behind_Master",
)


def dialect(engine: str) -> Dialect:
    if engine == "mysql":
        return MYSQL_84
    if engine == "mariadb":
        return MARIADB
    raise ValueError(f"no SQL replication dialect for engine {engine!r}")


def parse_mariadb_gtid_pos(text: str) -> frozenset[str]:
    """`0-1-5,1-3-9` -> set of domain-server-seq triples (order does not matter)."""
    return frozenset(part.strip() for part in text.split(",") if part.strip())
