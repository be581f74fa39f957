"""Idempotent primary/replica setup for MySQL 8.4 and MariaDB, through the driver.

Every pass re-reads the servers (never a stored status) and issues only the
statements that change something missing or wrong, so a pass over a healthy
group executes reads only. Connections are injected (`SqlSession`), so the
same code runs on mysql-connector connections in the operator and in tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dbbench_operator.redaction import scrub
from dbbench_operator.targets.sql import semi_sync as semisync
from dbbench_operator.targets.sql.base import SqlSession, scalar
from dbbench_operator.targets.sql.mysql_statements import (
    PRIMARY_READ_ONLY_QUERY,
    Dialect,
    ReplicationSource,
    create_replication_user,
    dialect,
    grant_replication,
    parse_mariadb_gtid_pos,
    replication_grant_check,
    user_exists,
)


@dataclass(frozen=True)
class ReplicationCredentials:
    user: str
    password: str


@dataclass(frozen=True)
class Member:
    """One server: a session to it and the address other servers use to reach it."""

    name: str
    host: str
    port: int
    session: SqlSession


@dataclass(frozen=True)
class ReplicaState:
    name: str
    ready: bool
    detail: str  # why not ready, or "replicating"
    reconfigured: bool


@dataclass(frozen=True)
class ReplicationReadiness:
    ready: bool
    reason: str  # Ready | WaitingForReplicas k/n | WaitingForSemiSync k/n
    message: str
    replicas: tuple[ReplicaState, ...]
    failure: str = ""  # strict: semi-sync fell back to asynchronous (waiting cannot fix it)


def _yes(value: Any) -> bool:
    return str(value).lower() in ("yes", "y", "1", "on")


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return -1


def _ensure_primary(
    primary: SqlSession, sql: Dialect, creds: ReplicationCredentials, semi_sync: bool
) -> None:
    if _yes(scalar(primary, PRIMARY_READ_ONLY_QUERY)):
        for statement in sql.writable_on:
            primary.execute(statement)
    if _int(scalar(primary, user_exists(creds.user))) < 1:
        primary.execute(create_replication_user(creds.user, creds.password))
    if not _yes(scalar(primary, replication_grant_check(creds.user))):
        primary.execute(grant_replication(creds.user))
    if semi_sync:
        semisync.ensure_side(primary, sql, "source")


def _io_connecting(status: dict[str, Any], sql: Dialect) -> bool:
    """The IO thread is (re)connecting and has not failed: a replica on its way.

    Re-pointing it on every pass would restart the attempt each time. A real
    failure (wrong password, nothing listening) sets Last_IO_Errno after the
    server's connect timeout and is then reconfigured.
    """
    return str(status.get(sql.io_running, "")).lower() == "connecting" and _int(
        status.get("Last_IO_Errno")
    ) in (0, -1)


def misconfiguration(status: dict[str, Any] | None, sql: Dialect, source: ReplicationSource) -> str:
    """Why a replica must be (re)configured, or "" when its configuration is right."""
    if status is None:
        return "not configured"
    gtid_mode = (
        _int(status.get("Auto_Position")) == 1
        if sql.flavor == "mysql"
        else str(status.get("Using_Gtid", "")).lower() == "slave_pos"
    )
    checks = [
        (
            str(status.get(sql.source_host)) == source.host
            and _int(status.get(sql.source_port)) == source.port,
            f"points at {status.get(sql.source_host)}:{status.get(sql.source_port)}",
        ),
        (str(status.get(sql.source_user)) == source.user, "wrong replication user"),
        (gtid_mode, "not positioned by GTID"),
        (
            (_yes(status.get(sql.io_running)) or _io_connecting(status, sql))
            and _yes(status.get(sql.sql_running)),
            "replication threads not running",
        ),
    ]
    problems = [why for ok, why in checks if not ok]
    problems += [
        # The server's text names the replication user and the source host: scrubbed.
        f"{kind} error {status.get(f'Last_{kind}_Errno')}: "
        f"{scrub(str(status.get(f'Last_{kind}_Error')), 300)}"
        for kind in ("IO", "SQL")
        if _int(status.get(f"Last_{kind}_Errno")) not in (0, -1)
    ]
    return "; ".join(problems)


def replica_progress(status: dict[str, Any], sql: Dialect) -> str:
    """Why a correctly configured replica is not ready yet, or ""."""
    return "IO thread connecting to source" if _io_connecting(status, sql) else ""


def _status(session: SqlSession, sql: Dialect) -> dict[str, Any] | None:
    rows = session.query(sql.replica_status)
    return rows[0] if rows else None


def _caught_up(replica: SqlSession, primary_position: str, sql: Dialect) -> bool:
    if sql.flavor == "mysql":
        status = _status(replica, sql) or {}
        return _int(status.get(sql.lag)) == 0 and _yes(
            scalar(replica, sql.gtid_subset(primary_position))
        )
    wanted = _by_domain(primary_position)
    have = _by_domain(str(scalar(replica, sql.replica_gtid_query) or ""))
    return all(have.get(domain, -1) >= seq for domain, seq in wanted.items())


def _by_domain(position: str) -> dict[str, int]:
    """MariaDB GTID position -> {domain: seq_no}."""
    result: dict[str, int] = {}
    for gtid in parse_mariadb_gtid_pos(position):
        domain, _server, seq = gtid.split("-")
        result[domain] = int(seq)
    return result


def _ensure_replica(
    member: Member, source: ReplicationSource, sql: Dialect, semi_sync: bool
) -> bool:
    """Bring one replica to the desired configuration; True when it was (re)configured."""
    session = member.session
    semisync_changed = semisync.ensure_side(session, sql, "replica") if semi_sync else False
    problem = misconfiguration(_status(session, sql), sql, source)
    if problem:
        session.execute(sql.stop_replica)
        session.execute(sql.change_source(source))
        session.execute(sql.start_replica)
    elif semisync_changed:
        # The replica side of semi-sync takes effect when the IO thread reconnects.
        for statement in sql.restart_io_thread:
            session.execute(statement)
    if not _yes(scalar(session, sql.read_only_query)):
        session.execute(sql.read_only_on)
    return bool(problem)


def _replica_state(
    member: Member, sql: Dialect, source: ReplicationSource, position: str, changed: bool
) -> ReplicaState:
    status = _status(member.session, sql)
    problem = misconfiguration(status, sql, source)
    if problem:
        return ReplicaState(member.name, False, problem, changed)
    waiting = replica_progress(status or {}, sql)
    if waiting:
        return ReplicaState(member.name, False, waiting, changed)
    if not _caught_up(member.session, position, sql):
        return ReplicaState(member.name, False, "catching up", changed)
    return ReplicaState(member.name, True, "replicating", changed)


def ensure_replication(
    primary: Member,
    replicas: Sequence[Member],
    creds: ReplicationCredentials,
    engine: str,
    *,
    semi_sync: bool = False,
) -> ReplicationReadiness:
    """One idempotent pass: configure what is missing, then report readiness.

    Readiness means every replica's IO and SQL threads run without error and
    the replica has applied everything the primary had when it was checked.
    """
    sql = dialect(engine)
    if not replicas:
        return ReplicationReadiness(True, "Ready", "standalone: nothing to replicate", ())
    _ensure_primary(primary.session, sql, creds, semi_sync)
    source = ReplicationSource(primary.host, primary.port, creds.user, creds.password)
    changed = {m.name: _ensure_replica(m, source, sql, semi_sync) for m in replicas}
    position = str(scalar(primary.session, sql.gtid_position_query) or "")
    states = tuple(_replica_state(m, sql, source, position, changed[m.name]) for m in replicas)
    ready = sum(state.ready for state in states)
    if semi_sync:
        verdict = semisync.check(primary.session, sql, [s.ready for s in states])
        if verdict.failure:
            return ReplicationReadiness(False, "SemiSyncFellBack", verdict.failure, states,
                                        verdict.failure)  # fmt: skip
        if ready == len(states) and verdict.waiting:
            return ReplicationReadiness(False, f"WaitingForSemiSync {verdict.waiting}",
                                        "replicas reconnecting as semi-sync", states)  # fmt: skip
    if ready == len(states):
        return ReplicationReadiness(True, "Ready", f"{ready}/{ready} replicas caught up", states)
    waiting = "; ".join(f"{s.name}: {s.detail}" for s in states if not s.ready)
    return ReplicationReadiness(False, f"WaitingForReplicas {ready}/{len(states)}", waiting, states)
