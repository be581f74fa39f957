"""Primary/replica setup for real, against three local mariadbd processes."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import mysql.connector
import pytest

from dbbench_operator.specs.databases.replication_flags import SEMI_SYNC_TIMEOUT_MS, role_flags
from dbbench_operator.targets.sql.mysql_replication import ReplicationReadiness, ensure_replication
from dbbench_operator.targets.sql.session import ConnectorSession, connect
from tests.fixtures.mariadb import MariaDBServer
from tests.fixtures.topology import make_request
from tests.integration.operator.targets.replication_support import (
    CREDS,
    RecordingSession,
    break_replica,
    members,
    until_ready,
    write_and_read,
)

pytestmark = pytest.mark.integration

READ_PREFIXES = ("SELECT", "SHOW")


def _session(server: MariaDBServer) -> ConnectorSession:
    args = server.connect_args()
    return connect(str(args["host"]), server.port, "root", server.root_password)


@pytest.fixture
def group(
    mariadb_factory: Callable[..., MariaDBServer],
) -> Iterator[tuple[list[MariaDBServer], list[RecordingSession]]]:
    # The replication flags the mysql chart passes for engine mariadb.
    chart_flags = ("--gtid-strict-mode=ON", "--relay-log=relay-bin")
    servers = [mariadb_factory(server_id=i, extra_args=chart_flags) for i in (1, 2, 3)]
    sessions = [RecordingSession(_session(s)) for s in servers]
    for session in sessions:
        # The fixture's account set-up went to each binary log; the official
        # images initialise with sql_log_bin=0, so start from empty logs as a
        # freshly deployed pod would.
        session.inner.execute("RESET MASTER")
    yield servers, sessions
    for session in sessions:
        session.inner.close()


def _until_ready(
    servers: list[MariaDBServer], sessions: list[RecordingSession], *, semi_sync: bool = False
) -> ReplicationReadiness:
    return until_ready(servers, sessions, "mariadb", semi_sync=semi_sync)


def _gtids(sessions: list[RecordingSession]) -> tuple[str, list[str]]:
    primary = sessions[0].inner.query("SELECT @@GLOBAL.gtid_binlog_pos AS p")[0]["p"]
    replicas = [s.inner.query("SELECT @@GLOBAL.gtid_slave_pos AS p")[0]["p"] for s in sessions[1:]]
    return primary, replicas


def test_row_reaches_every_replica_and_gtids_match(group: Any) -> None:
    servers, sessions = group
    first = _until_ready(servers, sessions)
    assert first.ready, first.message
    assert first.reason == "Ready"
    assert write_and_read(sessions, "hello") == [[{"v": "hello"}], [{"v": "hello"}]]
    assert _until_ready(servers, sessions).ready
    primary_pos, replica_pos = _gtids(sessions)
    assert primary_pos
    assert replica_pos == [primary_pos, primary_pos]
    # Replicas refuse ordinary writes.
    assert [s.inner.query("SELECT @@GLOBAL.read_only AS ro") for s in sessions[1:]] == [
        [{"ro": 1}],
        [{"ro": 1}],
    ]


def test_second_pass_changes_nothing(group: Any) -> None:
    servers, sessions = group
    assert _until_ready(servers, sessions).ready
    for session in sessions:
        session.executed.clear()
        session.queried.clear()
    again = _until_ready(servers, sessions)
    assert again.ready
    assert [s.executed for s in sessions] == [[], [], []]
    # It did look: the status of every replica was read afresh.
    assert all("SHOW SLAVE STATUS" in s.queried for s in sessions[1:])
    assert not any(r.reconfigured for r in again.replicas)


@pytest.mark.parametrize(
    "breakage",
    [
        ["STOP SLAVE"],
        ["STOP SLAVE", "RESET SLAVE ALL"],
        ["STOP SLAVE", "CHANGE MASTER TO MASTER_PASSWORD='wrong'", "START SLAVE"],
        ["STOP SLAVE", "CHANGE MASTER TO MASTER_PORT=1", "START SLAVE"],
    ],
    ids=["stopped", "reset", "wrong-password", "wrong-port"],
)
def test_broken_replica_is_repaired_by_next_pass(group: Any, breakage: list[str]) -> None:
    servers, sessions = group
    assert _until_ready(servers, sessions).ready
    break_replica(sessions[2], breakage, "mariadb")
    primary, replicas = members(servers, sessions)
    seen = ensure_replication(primary, replicas, CREDS, "mariadb")
    assert seen.replicas[1].reconfigured
    assert not seen.replicas[0].reconfigured
    repaired = _until_ready(servers, sessions)
    assert repaired.ready, repaired.message
    assert (
        write_and_read(sessions, f"after-{breakage[-1][:12]}")
        == [[{"v": f"after-{breakage[-1][:12]}"}]] * 2
    )


def test_waiting_reason_names_the_count(group: Any) -> None:
    servers, sessions = group
    assert _until_ready(servers, sessions).ready
    # A replica whose SQL thread hits a duplicate key stops with an error
    # (DML: MariaDB replays DDL idempotently by default).
    write_and_read(sessions, "base")
    sessions[2].inner.execute("SET GLOBAL read_only=OFF")
    sessions[2].inner.execute("INSERT INTO bench.t VALUES (5, 'replica')")
    sessions[0].inner.execute("INSERT INTO bench.t VALUES (5, 'primary')")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        status = sessions[2].inner.query("SHOW SLAVE STATUS")[0]
        if int(status["Last_SQL_Errno"]):
            break
        time.sleep(0.2)
    # The healthy replica must have applied that write, or it is merely
    # catching up when checked (seen under load: "WaitingForReplicas 0/2").
    deadline = time.monotonic() + 30
    while _read_id5(sessions[1]) != [{"v": "primary"}] and time.monotonic() < deadline:
        time.sleep(0.2)
    primary, replicas = members(servers, sessions)
    result = ensure_replication(primary, replicas, CREDS, "mariadb")
    assert not result.ready
    assert result.reason == "WaitingForReplicas 1/2"
    assert "db-2" in result.message


def test_semi_sync_for_strict(group: Any) -> None:
    servers, sessions = group
    result = _until_ready(servers, sessions, semi_sync=True)
    assert result.ready, result.message
    primary = sessions[0].inner
    assert primary.query("SHOW GLOBAL VARIABLES LIKE 'rpl_semi_sync_master_enabled'") == [
        {"Variable_name": "rpl_semi_sync_master_enabled", "Value": "ON"}
    ]
    deadline = time.monotonic() + 20
    clients: Any = None
    while time.monotonic() < deadline:
        clients = primary.query("SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_master_clients'")
        if clients and clients[0]["Value"] == "2":
            break
        time.sleep(0.2)
    assert clients == [{"Variable_name": "Rpl_semi_sync_master_clients", "Value": "2"}]
    assert write_and_read(sessions, "semi") == [[{"v": "semi"}], [{"v": "semi"}]]
    yes_tx = primary.query("SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_master_yes_tx'")
    assert int(yes_tx[0]["Value"]) >= 1
    for session in sessions:
        session.executed.clear()
    assert _until_ready(servers, sessions, semi_sync=True).ready
    assert [s.executed for s in sessions] == [[], [], []]


def test_role_flags_keep_replica_settings_across_a_restart(
    mariadb_factory: Callable[..., MariaDBServer],
) -> None:
    """Issue 8, defect 6: what the operator sets at runtime is also in the server
    flags the chart gives each role, so a restarted pod comes back the same."""
    request = make_request("mariadb", "primaryReplica", 3, durability="strict")
    flags = role_flags(request)
    base = ("--gtid-strict-mode=ON", "--relay-log=relay-bin")
    primary = mariadb_factory(server_id=1, extra_args=(*base, *flags["primary"]))
    replica = mariadb_factory(server_id=2, extra_args=(*base, *flags["replica"]))
    with contextlib.closing(_session(primary)) as p, contextlib.closing(_session(replica)) as r:
        assert _globals(r, "read_only", "rpl_semi_sync_slave_enabled") == ["1", "1"]
        assert _globals(p, "read_only", "rpl_semi_sync_master_enabled") == ["0", "1"]
        waits = _globals(p, "rpl_semi_sync_master_timeout", "rpl_semi_sync_master_wait_no_slave")
        assert waits == [str(SEMI_SYNC_TIMEOUT_MS), "0"]
    safe = role_flags(make_request("mariadb", "primaryReplica", 2))
    assert safe["primary"] == []
    assert safe["replica"] == ["--read-only=ON"]


def _globals(session: ConnectorSession, *names: str) -> list[str]:
    row = session.query("SELECT " + ", ".join(f"@@GLOBAL.{n} AS {n}" for n in names))[0]
    return [str(int(row[n])) if isinstance(row[n], int) else str(row[n]) for n in names]


def test_strict_fails_loudly_when_semi_sync_falls_back(group: Any) -> None:
    """Issue 8, defect 6: a write committed without a replica's acknowledgement
    (semi-sync timed out to asynchronous) fails the target, it is not Ready."""
    servers, sessions = group
    assert _until_ready(servers, sessions, semi_sync=True).ready
    primary = sessions[0].inner
    # Both replicas stop acknowledging; a short timeout keeps the test quick.
    for session in sessions[1:]:
        session.inner.execute("STOP SLAVE IO_THREAD")
    primary.execute("SET GLOBAL rpl_semi_sync_master_timeout=300")
    primary.execute("INSERT INTO dbbench_setup.semi_sync_probe VALUES (2, NOW(6), 0)")
    first, replicas = members(servers, sessions)
    seen = ensure_replication(first, replicas, CREDS, "mariadb", semi_sync=True)
    assert not seen.ready
    assert seen.failure.startswith("semi-synchronous replication fell back to asynchronous")
    assert "1 transaction(s) committed without a replica's acknowledgement" in seen.failure
    # It stays failed after the replicas are back: the step's writes were not strict.
    again = _until_ready(servers, sessions, semi_sync=True)
    assert again.failure


def test_strict_probe_write_is_acknowledged_once(group: Any) -> None:
    servers, sessions = group
    ready = _until_ready(servers, sessions, semi_sync=True)
    assert ready.ready, ready.message
    primary = sessions[0].inner
    yes_tx = primary.query("SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_master_yes_tx'")
    assert int(yes_tx[0]["Value"]) >= 1  # the setup's probe write, acknowledged
    assert primary.query("SELECT COUNT(*) AS n FROM dbbench_setup.semi_sync_probe") == [{"n": 1}]


def _read_id5(session: RecordingSession) -> list[dict[str, Any]] | str:
    try:
        return session.inner.query("SELECT v FROM bench.t WHERE id = 5")
    except mysql.connector.Error as exc:
        return str(exc)
