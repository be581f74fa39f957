"""Idempotent streaming-replication setup for PostgreSQL, through the driver.

The standbys arrive as copies of the primary (the chart's init container runs
pg_basebackup and leaves standby.signal) that stream from nowhere yet. Each
pass re-reads the servers and changes only what is missing or wrong:
1. primary: the replication role (LOGIN REPLICATION) and one physical slot per
   standby (WAL is kept until that standby has it);
2. each standby: primary_conninfo (as the replication role, application_name
   = the pod) and primary_slot_name, with ALTER SYSTEM (kept across restarts)
   and a reload, which restarts its WAL receiver;
3. primary: synchronous_standby_names, `ANY 1 (<standbys>)` for durability
   strict and empty otherwise.
Ready: every standby in recovery, streaming from the primary, and replayed up
to the primary's position read after the changes; for strict also every
standby listed as `quorum` in pg_stat_replication (a synchronous candidate).
"""

from __future__ import annotations

from collections.abc import Sequence

from dbbench_operator.targets.sql import postgres_statements as pg
from dbbench_operator.targets.sql.base import SqlSession, scalar
from dbbench_operator.targets.sql.mysql_replication import (
    Member,
    ReplicaState,
    ReplicationCredentials,
    ReplicationReadiness,
)

__all__ = ["ensure_streaming"]


def _set(session: SqlSession, name: str, value: str) -> bool:
    """ALTER SYSTEM + reload when the value in effect differs; True when changed."""
    if str(scalar(session, pg.setting_query(name)) or "") == value:
        return False
    session.execute(pg.alter_system(name, value))
    session.execute(pg.RELOAD)
    return True


def _ensure_primary(primary: SqlSession, creds: ReplicationCredentials, standbys: list[str]) -> str:
    """Role and slots; "" or why the primary cannot serve (it is in recovery itself)."""
    if primary.query(pg.IN_RECOVERY)[0]["recovery"]:
        return "ordinal 0 is in recovery: it is not a primary"
    role = primary.query(pg.role_query(creds.user))
    if not role:
        primary.execute(pg.create_role(creds.user, creds.password))
    elif not (role[0]["replication"] and role[0]["login"]):
        primary.execute(pg.grant_role(creds.user))
    slots = {row["slot_name"] for row in primary.query(pg.SLOTS)}
    for name in standbys:
        if pg.slot_name(name) not in slots:
            primary.execute(pg.create_slot(pg.slot_name(name)))
    return ""


def _ensure_standby(member: Member, upstream: pg.Upstream) -> bool:
    """primary_conninfo and primary_slot_name; True when either was (re)set."""
    changed = _set(member.session, "primary_conninfo", upstream.conninfo(member.name))
    return _set(member.session, "primary_slot_name", pg.slot_name(member.name)) or changed


def _streaming_problem(member: Member, primary: Member, position: int) -> str:
    """Why a configured standby is not streaming the primary's WAL up to `position`, or ""."""
    session = member.session
    if not session.query(pg.IN_RECOVERY)[0]["recovery"]:
        return "not in recovery: not a standby"
    receiver = session.query(pg.WAL_RECEIVER)
    if not receiver or receiver[0]["status"] != "streaming":
        return f"not streaming ({receiver[0]['status'] if receiver else 'no WAL receiver'})"
    source = (receiver[0]["sender_host"], receiver[0]["sender_port"])
    if source != (primary.host, primary.port):
        return f"streams from {source[0]}:{source[1]}"
    replayed = scalar(session, pg.REPLAY_LSN)
    if replayed is None or pg.parse_lsn(str(replayed)) < position:
        return "catching up"
    return ""


def _standby_state(
    member: Member,
    primary: Member,
    position: int,
    sync_state: str | None,
    *,
    changed: bool,
    quorum: bool,
) -> ReplicaState:
    if changed:  # its WAL receiver restarts with the new settings: look again next pass
        problem = "reconfigured, WAL receiver restarting"
    else:
        problem = _streaming_problem(member, primary, position)
    if not problem and quorum and sync_state not in ("quorum", "sync"):
        problem = f"not a synchronous standby ({sync_state})"
    return ReplicaState(member.name, not problem, problem or "streaming", changed)


def ensure_streaming(
    primary: Member,
    standbys: Sequence[Member],
    creds: ReplicationCredentials,
    *,
    synchronous: bool = False,
) -> ReplicationReadiness:
    """One idempotent pass: configure what is missing, then report readiness."""
    if not standbys:
        return ReplicationReadiness(True, "Ready", "standalone: nothing to replicate", ())
    names = [m.name for m in standbys]
    problem = _ensure_primary(primary.session, creds, names)
    if problem:
        return ReplicationReadiness(False, "PrimaryInRecovery", problem, (), problem)
    upstream = pg.Upstream(primary.host, primary.port, creds.user, creds.password)
    changed = {m.name: _ensure_standby(m, upstream) for m in standbys}
    wanted = pg.synchronous_standby_names(names if synchronous else [])
    if _set(primary.session, pg.SYNC_STANDBY_NAMES, wanted):
        # pg_reload_conf() only signals: sessions take the value a moment later.
        # Ready is reported once a later pass reads it in effect, never before
        # (a step must not start while commits still wait, or do not yet wait).
        detail = f"synchronous_standby_names set to {wanted!r}; waiting for the reload"
        return ReplicationReadiness(False, "WaitingForSettings", detail, ())
    position = pg.parse_lsn(str(scalar(primary.session, pg.CURRENT_LSN)))
    sync_states = {
        row["application_name"]: row["sync_state"] for row in primary.session.query(pg.REPLICATION)
    }
    states = tuple(
        _standby_state(
            m,
            primary,
            position,
            sync_states.get(m.name),
            changed=changed[m.name],
            quorum=synchronous,
        )
        for m in standbys
    )
    ready = sum(state.ready for state in states)
    if ready == len(states):
        kind = "synchronous (quorum of 1)" if synchronous else "asynchronous"
        return ReplicationReadiness(
            True, "Ready", f"{ready}/{ready} standbys streaming, {kind}", states
        )
    waiting = "; ".join(f"{s.name}: {s.detail}" for s in states if not s.ready)
    return ReplicationReadiness(False, f"WaitingForStandbys {ready}/{len(states)}", waiting, states)
