"""Which replica states make the setup re-point replication (pure decisions).

Issue 8, defect 7: an IO thread that is still `Connecting` without an error is
a replica on its way, not a broken one; re-setting it on every pass would keep
it from ever connecting. An error (wrong password, nothing listening) is broken.
"""

from __future__ import annotations

from typing import Any

from dbbench_operator.targets.sql.mysql_replication import misconfiguration, replica_progress
from dbbench_operator.targets.sql.mysql_statements import MARIADB, MYSQL_84, ReplicationSource

SOURCE = ReplicationSource("db-0.db.ns.svc.cluster.local", 3306, "dbbench_repl", "pw")


def _mariadb(io: str, io_errno: int = 0, **extra: Any) -> dict[str, Any]:
    return {
        "Master_Host": SOURCE.host, "Master_Port": 3306, "Master_User": "dbbench_repl",
        "Using_Gtid": "Slave_Pos", "Slave_IO_Running": io, "Slave_SQL_Running": "Yes",
        "Last_IO_Errno": io_errno, "Last_IO_Error": "", "Last_SQL_Errno": 0, **extra,
    }  # fmt: skip


def _mysql(io: str, io_errno: int = 0) -> dict[str, Any]:
    return {
        "Source_Host": SOURCE.host, "Source_Port": 3306, "Source_User": "dbbench_repl",
        "Auto_Position": 1, "Replica_IO_Running": io, "Replica_SQL_Running": "Yes",
        "Last_IO_Errno": io_errno, "Last_IO_Error": "", "Last_SQL_Errno": 0,
    }  # fmt: skip


def test_connecting_without_error_is_not_reconfigured_but_not_ready() -> None:
    assert misconfiguration(_mariadb("Connecting"), MARIADB, SOURCE) == ""
    assert misconfiguration(_mysql("Connecting"), MYSQL_84, SOURCE) == ""
    assert replica_progress(_mariadb("Connecting"), MARIADB) == "IO thread connecting to source"
    assert replica_progress(_mariadb("Yes"), MARIADB) == ""


def test_connecting_with_an_error_is_reconfigured() -> None:
    problem = misconfiguration(_mariadb("Connecting", 1045), MARIADB, SOURCE)
    assert "IO error 1045" in problem
    assert misconfiguration(_mysql("Connecting", 2003), MYSQL_84, SOURCE) != ""


def test_stopped_threads_are_reconfigured() -> None:
    assert misconfiguration(_mariadb("No"), MARIADB, SOURCE) == "replication threads not running"
    assert misconfiguration(None, MARIADB, SOURCE) == "not configured"
