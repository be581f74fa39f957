"""Semi-synchronous replication for durability strict: enable it, and fail
loudly when it silently fell back to asynchronous.

A primary whose replicas do not acknowledge within the timeout commits
asynchronously and counts the commit in `Rpl_semi_sync_*_no_tx`. Results
measured that way are not strict, so the setup compares that counter with
the value it recorded when it last proved semi-sync working (a probe write,
acknowledged, in `dbbench_setup.semi_sync_probe`) and reports a failure when
it grew. A pass over a healthy group reads only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from dbbench_operator.specs.databases.replication_flags import SEMI_SYNC_TIMEOUT_MS
from dbbench_operator.targets.sql.base import SqlSession
from dbbench_operator.targets.sql.mysql_statements import Dialect

PROBE_SCHEMA = "dbbench_setup"
PROBE_TABLE = f"{PROBE_SCHEMA}.semi_sync_probe"
_PROBE_EXISTS = (
    "SELECT COUNT(*) AS n FROM information_schema.tables "
    f"WHERE table_schema = '{PROBE_SCHEMA}' AND table_name = 'semi_sync_probe'"
)
_PROBE_BASELINE = f"SELECT no_tx FROM {PROBE_TABLE} WHERE id = 1"


@dataclass(frozen=True)
class SemiSyncVerdict:
    failure: str = ""  # semi-sync fell back: the target cannot give strict results
    waiting: str = ""  # e.g. "2/3 replicas acknowledging": not ready yet


def _normal(value: Any) -> str:
    text = str(value).upper()
    return {"1": "ON", "YES": "ON", "0": "OFF", "NO": "OFF"}.get(text, text)


def ensure_side(session: SqlSession, sql: Dialect, role: Literal["source", "replica"]) -> bool:
    """Install (MySQL) and set one side's variables; True when something changed."""
    query = sql.semisync_variables(role)
    rows = session.query(query)
    plugin = sql.semisync_source_plugin if role == "source" else sql.semisync_replica_plugin
    if not rows and plugin is not None:
        session.execute(plugin)
        rows = session.query(query)
    current = {str(r.get("Variable_name")).lower(): _normal(r.get("Value")) for r in rows}
    changed = False
    for name, value in sql.semisync_wanted(role, SEMI_SYNC_TIMEOUT_MS).items():
        if current.get(name) != value:
            session.execute(sql.set_variable(name, value))
            changed = True
    return changed


def _counters(primary: SqlSession, sql: Dialect) -> dict[str, str]:
    prefix = sql.semisync_prefix("source")
    return {
        str(r.get("Variable_name")).lower().removeprefix(prefix): str(r.get("Value")).upper()
        for r in primary.query(sql.semisync_status())
    }


def _count(counters: dict[str, str], name: str) -> int:
    value = counters.get(name, "0")
    return int(value) if value.isdigit() else 0


def _baseline(primary: SqlSession) -> int | None:
    rows = primary.query(_PROBE_EXISTS)
    if not rows or int(rows[0]["n"]) < 1:
        return None
    found = primary.query(_PROBE_BASELINE)
    return int(found[0]["no_tx"]) if found else None


def _probe(primary: SqlSession, no_tx: int) -> None:
    """One write that must be acknowledged; records the fallback count it starts from."""
    primary.execute(f"CREATE DATABASE IF NOT EXISTS {PROBE_SCHEMA}")
    primary.execute(
        f"CREATE TABLE IF NOT EXISTS {PROBE_TABLE} "
        "(id INT PRIMARY KEY, at DATETIME(6) NOT NULL, no_tx BIGINT NOT NULL)"
    )
    primary.execute(f"REPLACE INTO {PROBE_TABLE} VALUES (1, NOW(6), {int(no_tx)})")


def _fell_back(no_tx: int, since: int, detail: str) -> str:
    return (
        "semi-synchronous replication fell back to asynchronous: "
        f"{no_tx - since} transaction(s) committed without a replica's acknowledgement "
        f"({detail}); durability strict did not hold, so results would not be strict: "
        "check the replicas' load and network, then run again"
    )


def check(primary: SqlSession, sql: Dialect, replicas_ready: Sequence[bool]) -> SemiSyncVerdict:
    """After a pass configured replication: did semi-sync hold, and is it working now?"""
    counters = _counters(primary, sql)
    no_tx, yes_tx = _count(counters, "no_tx"), _count(counters, "yes_tx")
    baseline = _baseline(primary)
    restarted = baseline is None or yes_tx == 0 or no_tx < baseline
    if not restarted and baseline is not None and no_tx > baseline:
        return SemiSyncVerdict(failure=_fell_back(no_tx, baseline, "since the setup's probe"))
    clients, wanted = _count(counters, "clients"), len(replicas_ready)
    if clients < wanted or not all(replicas_ready):
        return SemiSyncVerdict(waiting=f"{clients}/{wanted} replicas acknowledging")
    if not restarted:
        return SemiSyncVerdict()
    _probe(primary, no_tx)
    after = _counters(primary, sql)
    if _count(after, "no_tx") > no_tx or after.get("status") != "ON":
        return SemiSyncVerdict(failure=_fell_back(_count(after, "no_tx"), no_tx, "probe write"))
    return SemiSyncVerdict()
