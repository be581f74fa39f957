"""Exact SQL for PostgreSQL streaming-replication setup (pure: values in, text out).

As in mysql_statements: names and secrets are validated, not escaped (sql_base).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from dbbench_operator.targets.sql.base import SECRET, ReplicationLogin, checked

_ROLE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
# Pod names (DNS labels): application names and, with `-` as `_`, slot names.
_MEMBER = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
_LSN = re.compile(r"^([0-9A-Fa-f]{1,8})/([0-9A-Fa-f]{1,8})$")


@dataclass(frozen=True)
class Upstream(ReplicationLogin):
    """Where a standby streams from, as whom, and under which name."""

    USER: ClassVar[re.Pattern[str]] = _ROLE

    def conninfo(self, member: str) -> str:
        """primary_conninfo of standby `member`; its application_name is the member's name."""
        checked(_MEMBER, member, "member")
        return (
            f"host={self.host} port={self.port} user={self.user} password={self.password} "
            f"application_name={member}"
        )


def slot_name(member: str) -> str:
    """The physical replication slot that keeps WAL for standby `member`."""
    return "dbbench_" + checked(_MEMBER, member, "member").replace("-", "_")


IN_RECOVERY = "SELECT pg_is_in_recovery() AS recovery"
CURRENT_LSN = "SELECT pg_current_wal_lsn()::text AS lsn"
REPLAY_LSN = "SELECT pg_last_wal_replay_lsn()::text AS lsn"
WAL_RECEIVER = "SELECT status, sender_host, sender_port, slot_name FROM pg_stat_wal_receiver"
REPLICATION = (
    "SELECT application_name, state, sync_state, replay_lsn::text FROM pg_stat_replication"
)
SLOTS = "SELECT slot_name FROM pg_replication_slots WHERE slot_type = 'physical'"
RELOAD = "SELECT pg_reload_conf()"
SYNC_STANDBY_NAMES = "synchronous_standby_names"


def role_query(user: str) -> str:
    checked(_ROLE, user, "user")
    return (
        "SELECT rolreplication AS replication, rolcanlogin AS login FROM pg_roles "
        f"WHERE rolname = '{user}'"
    )


def create_role(user: str, password: str) -> str:
    checked(_ROLE, user, "user")
    checked(SECRET, password, "password")
    return f"CREATE ROLE {user} WITH LOGIN REPLICATION PASSWORD '{password}'"


def grant_role(user: str) -> str:
    return f"ALTER ROLE {checked(_ROLE, user, 'user')} WITH LOGIN REPLICATION"


def create_slot(slot: str) -> str:
    # immediately_reserve: WAL is kept from now on, not from the first connection.
    return f"SELECT pg_create_physical_replication_slot('{checked(_ROLE, slot, 'slot')}', true)"


def setting_query(name: str) -> str:
    """The value in effect (pg_settings shows the superuser the full conninfo)."""
    return f"SELECT setting FROM pg_settings WHERE name = '{checked(_ROLE, name, 'setting')}'"


def alter_system(name: str, value: str) -> str:
    """ALTER SYSTEM (kept in postgresql.auto.conf: survives a restart); RELOAD applies it."""
    checked(_ROLE, name, "setting")
    if "'" in value or "\\" in value:
        raise ValueError(f"value of {name} has characters that are not allowed")
    return f"ALTER SYSTEM SET {name} = '{value}'"


def synchronous_standby_names(standbys: Sequence[str]) -> str:
    """Quorum of one: a commit waits for any one standby's flush, as semi-sync waits
    for one replica's acknowledgement. Empty: asynchronous."""
    if not standbys:
        return ""
    names = ", ".join(f'"{checked(_MEMBER, s, "member")}"' for s in standbys)
    return f"ANY 1 ({names})"


def parse_lsn(text: str) -> int:
    """A WAL position ("16/B374D848") as a number, for comparing positions."""
    match = _LSN.match(text.strip())
    if match is None:
        raise ValueError(f"not a WAL position: {text!r}")
    return (int(match.group(1), 16) << 32) | int(match.group(2), 16)
