"""Primary/replica setup for real, against three local Oracle MySQL 9.7 servers.

The same cases as test_mariadb_replication.py, in MySQL 8.4+ syntax: the
operator's statements (mysql_statements.MYSQL_84) are checked here by a real
server executing them, not by comparing their text.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import mysql.connector
import pytest

from dbbench_operator.targets.external import probe
from dbbench_operator.targets.sql.mysql_replication import ReplicationReadiness, ensure_replication
from dbbench_operator.targets.sql.session import connect
from tests.fixtures.mysql import MySQLServer
from tests.integration.operator.targets.replication_support import (
    CREDS,
    RecordingSession,
    break_replica,
    members,
    until_ready,
    write_and_read,
)

pytestmark = pytest.mark.integration


Group = tuple[list[MySQLServer], list[RecordingSession]]


@pytest.fixture
def group(mysql_factory: Callable[..., list[MySQLServer]]) -> Iterator[Group]:
    # The replication flags the mysql chart passes for engine mysql (GTIDs,
    # binary log) are the fixture's defaults; server ids differ per pod.
    servers = mysql_factory([1, 2, 3])
    sessions = [
        RecordingSession(connect("127.0.0.1", s.port, "root", s.root_password)) for s in servers
    ]
    # The fixture creates its accounts with sql_log_bin=0: every log starts
    # empty, as on a freshly deployed pod.
    assert [s.inner.query("SELECT @@GLOBAL.gtid_executed AS g") for s in sessions] == [
        [{"g": ""}]
    ] * 3
    yield servers, sessions
    for session in sessions:
        session.inner.close()


def _until_ready(group: Group, *, semi_sync: bool = False) -> ReplicationReadiness:
    # As these tests always polled: up to 60 s, and past a reported failure.
    return until_ready(*group, "mysql", semi_sync=semi_sync, timeout=60, stop_on_failure=False)


def _gtids(sessions: list[RecordingSession]) -> list[str]:
    return [
        str(s.inner.query("SELECT @@GLOBAL.gtid_executed AS g")[0]["g"]).replace("\n", "")
        for s in sessions
    ]


def test_the_servers_are_oracle_mysql(group: Group) -> None:
    _, sessions = group
    versions = [s.inner.query("SELECT @@version AS v")[0]["v"] for s in sessions]
    assert all(str(v).startswith("9.") for v in versions), versions


def test_row_reaches_every_replica_and_gtids_match(group: Group) -> None:
    _, sessions = group
    first = _until_ready(group)
    assert first.ready, first.message
    assert first.reason == "Ready"
    assert write_and_read(sessions, "hello") == [[{"v": "hello"}], [{"v": "hello"}]]
    assert _until_ready(group).ready
    primary_set, *replica_sets = _gtids(sessions)
    assert primary_set
    assert replica_sets == [primary_set, primary_set]
    # Replicas refuse writes, even from accounts with SUPER (super_read_only).
    assert [s.inner.query("SELECT @@GLOBAL.super_read_only AS ro") for s in sessions[1:]] == [
        [{"ro": 1}],
        [{"ro": 1}],
    ]
    with pytest.raises(mysql.connector.Error, match="super-read-only"):
        sessions[1].inner.execute("INSERT INTO bench.t VALUES (2, 'replica')")
    # GTID auto-positioning, as the code asked for.
    status = sessions[1].inner.query("SHOW REPLICA STATUS")[0]
    assert (status["Auto_Position"], status["Source_User"]) == (1, CREDS.user)
    # An external-target probe tells the roles apart on real MySQL.
    servers, _ = group
    uris = [f"mysql://root:{s.root_password}@127.0.0.1:{s.port}/" for s in servers]
    assert [probe(uri).topology for uri in uris] == ["primaryReplica", "replica", "replica"]


def test_second_pass_changes_nothing(group: Group) -> None:
    _, sessions = group
    assert _until_ready(group).ready
    for session in sessions:
        session.executed.clear()
        session.queried.clear()
    again = _until_ready(group)
    assert again.ready
    assert [s.executed for s in sessions] == [[], [], []]
    # It did look: the status of every replica was read afresh.
    assert all("SHOW REPLICA STATUS" in s.queried for s in sessions[1:])
    assert not any(r.reconfigured for r in again.replicas)


@pytest.mark.parametrize(
    "breakage",
    [
        ["STOP REPLICA"],
        ["STOP REPLICA", "RESET REPLICA ALL"],
        ["STOP REPLICA", "CHANGE REPLICATION SOURCE TO SOURCE_PASSWORD='wrong'", "START REPLICA"],
        ["STOP REPLICA", "CHANGE REPLICATION SOURCE TO SOURCE_PORT=1", "START REPLICA"],
    ],
    ids=["stopped", "reset", "wrong-password", "wrong-port"],
)
def test_broken_replica_is_repaired_by_next_pass(group: Group, breakage: list[str]) -> None:
    _, sessions = group
    assert _until_ready(group).ready
    break_replica(sessions[2], breakage, "mysql")
    primary, replicas = members(*group)
    seen = ensure_replication(primary, replicas, CREDS, "mysql")
    assert seen.replicas[1].reconfigured
    assert not seen.replicas[0].reconfigured
    repaired = _until_ready(group)
    assert repaired.ready, repaired.message
    value = f"after-{breakage[-1][:12]}"
    assert write_and_read(sessions, value) == [[{"v": value}]] * 2


def test_waiting_reason_names_the_count(group: Group) -> None:
    _, sessions = group
    assert _until_ready(group).ready
    # A replica whose SQL thread hits a duplicate key stops with an error.
    write_and_read(sessions, "base")
    replica = sessions[2].inner
    replica.execute("SET SESSION sql_log_bin=0")  # keep the replica's GTID set clean
    replica.execute("SET GLOBAL super_read_only=OFF")
    replica.execute("INSERT INTO bench.t VALUES (5, 'replica')")
    sessions[0].inner.execute("INSERT INTO bench.t VALUES (5, 'primary')")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        status = replica.query("SHOW REPLICA STATUS")[0]
        if int(status["Last_SQL_Errno"]):
            break
        time.sleep(0.2)
    assert int(status["Last_SQL_Errno"]) == 1062  # duplicate key
    # The healthy replica must have applied that write, or it is merely
    # catching up when checked (seen under load: "WaitingForReplicas 0/2").
    deadline = time.monotonic() + 30
    while _read_id5(sessions[1]) != [{"v": "primary"}] and time.monotonic() < deadline:
        time.sleep(0.2)
    primary, replicas = members(*group)
    # Under load the healthy replica can still be reported catching up on the
    # first pass (0/2); the count must settle at 1/2 within bounded time.
    deadline = time.monotonic() + 30
    result = ensure_replication(primary, replicas, CREDS, "mysql")
    while result.reason != "WaitingForReplicas 1/2" and time.monotonic() < deadline:
        time.sleep(1)
        result = ensure_replication(primary, replicas, CREDS, "mysql")
    assert not result.ready
    assert result.reason == "WaitingForReplicas 1/2"
    assert "db-2" in result.message


def test_semi_sync_for_strict(group: Group) -> None:
    _, sessions = group
    result = _until_ready(group, semi_sync=True)
    assert result.ready, result.message
    primary = sessions[0].inner
    assert primary.query("SHOW GLOBAL VARIABLES LIKE 'rpl_semi_sync_source_enabled'") == [
        {"Variable_name": "rpl_semi_sync_source_enabled", "Value": "ON"}
    ]
    for replica in sessions[1:]:
        assert replica.inner.query(
            "SHOW GLOBAL VARIABLES LIKE 'rpl_semi_sync_replica_enabled'"
        ) == [{"Variable_name": "rpl_semi_sync_replica_enabled", "Value": "ON"}]
    deadline = time.monotonic() + 30
    clients: Any = None
    while time.monotonic() < deadline:
        clients = primary.query("SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_source_clients'")
        if clients and clients[0]["Value"] == "2":
            break
        time.sleep(0.2)
    assert clients == [{"Variable_name": "Rpl_semi_sync_source_clients", "Value": "2"}]
    assert write_and_read(sessions, "semi") == [[{"v": "semi"}], [{"v": "semi"}]]
    yes_tx = primary.query("SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_source_yes_tx'")
    assert int(yes_tx[0]["Value"]) >= 1
    no_tx = primary.query("SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_source_no_tx'")
    assert int(no_tx[0]["Value"]) == 0  # no commit fell back to asynchronous
    for session in sessions:
        session.executed.clear()
    assert _until_ready(group, semi_sync=True).ready
    assert [s.executed for s in sessions] == [[], [], []]


def _read_id5(session: RecordingSession) -> list[dict[str, Any]] | str:
    try:
        return session.inner.query("SELECT v FROM bench.t WHERE id = 5")
    except mysql.connector.Error as exc:
        return str(exc)
