"""Idempotent MongoDB setup: replica sets, config servers, shards, users.

Each call re-reads the servers and sends a state-changing command only when
the servers say it is missing. Clients are injected (`AdminClient`): the
operator passes pymongo-backed ones (`mongo_client.py`), tests a recorder.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from dbbench_operator.specs.databases.target_names import ReplicaSetLayout
from dbbench_operator.targets.mongodb import commands as cmd


class CommandFailedError(Exception):
    """The server answered with ok: 0 (pymongo's OperationFailure, translated)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"{message} (code {code})")
        self.code = code


class UnreachableError(Exception):
    """No answer: the member is not up, not resolvable, or refused the connection."""


class AdminClient(Protocol):
    """Run one command on the admin database of one server (or mongos)."""

    def admin_command(self, command: Mapping[str, Any]) -> dict[str, Any]: ...


@dataclass(frozen=True)
class SetupResult:
    ready: bool
    reason: str  # Ready | WaitingForMembers k/n | WaitingForPrimary | WaitingForShards k/n | ...
    message: str = ""
    primary: str | None = None
    actions: tuple[str, ...] = ()  # state-changing commands sent in this pass
    shard_key: str = ""  # sharded: the benchmark collections' shard key, e.g. "_id: hashed"


def _answers(client: AdminClient) -> bool:
    try:
        client.admin_command(cmd.PING)
    except UnreachableError:
        return False
    return True


def _status(client: AdminClient) -> dict[str, Any] | None:
    """The member's replSetGetStatus, or None when it has no configuration yet."""
    try:
        return client.admin_command(cmd.REPL_SET_GET_STATUS)
    except CommandFailedError as exc:
        if exc.code == cmd.NOT_YET_INITIALIZED:
            return None
        raise


def _initiate(
    replica_set: ReplicaSetLayout,
    client: AdminClient,
    sleep: Callable[[float], None],
    attempts: int,
) -> str:
    """Send replSetInitiate; "" on success, else why it has to wait."""
    for attempt in range(attempts):
        try:
            client.admin_command(cmd.repl_set_initiate(replica_set))
        except CommandFailedError as exc:
            if exc.code == cmd.ALREADY_INITIALIZED:
                return ""
            if exc.code != cmd.NODE_NOT_FOUND:
                raise
            # A member's DNS name or port is not answering yet for its peers.
            if attempt + 1 < attempts:
                sleep(1.0)
                continue
            return f"NodeNotFound after {attempts} attempts: {exc}"
        return ""
    return "initiate did not run"  # pragma: no cover - attempts >= 1


def _best_status(statuses: Sequence[dict[str, Any] | None]) -> dict[str, Any] | None:
    """Prefer the primary's own view of the set, else any configured member's."""
    configured = [s for s in statuses if s is not None]
    for status in configured:
        if status.get("myState") == 1:
            return status
    return configured[0] if configured else None


def ensure_replica_set(
    replica_set: ReplicaSetLayout,
    clients: Sequence[AdminClient],
    *,
    sleep: Callable[[float], None] = time.sleep,
    attempts: int = 3,
) -> SetupResult:
    """Initiate once every member answers; ready = one PRIMARY + healthy SECONDARYs.

    `clients[i]` talks directly to member i (directConnection).
    """
    expected = replica_set.members
    answering = [c for c in clients if _answers(c)]
    if len(answering) < expected:
        return SetupResult(False, f"WaitingForMembers {len(answering)}/{expected}")
    statuses: list[dict[str, Any] | None] = [_status(c) for c in clients]
    actions: list[str] = []
    if all(s is None for s in statuses):
        waiting = _initiate(replica_set, clients[0], sleep, attempts)
        actions.append("replSetInitiate")
        if waiting:
            return SetupResult(False, "WaitingForMembers", waiting, None, tuple(actions))
        statuses = [_status(clients[0])]
    status = _best_status(statuses)
    if status is None:
        return SetupResult(False, "WaitingForPrimary", "not initiated yet", None, tuple(actions))
    health = cmd.interpret_status(status, expected)
    return SetupResult(health.ready, health.reason, "", health.primary, tuple(actions))


def ensure_shards(
    shards: Sequence[ReplicaSetLayout],
    shard_results: Sequence[SetupResult],
    mongos: AdminClient,
) -> SetupResult:
    """addShard for every shard with a primary that listShards does not show yet."""
    if not _answers(mongos):
        return SetupResult(False, "WaitingForMongos")
    present = cmd.shard_names(mongos.admin_command(cmd.LIST_SHARDS))
    actions: list[str] = []
    for layout, result in zip(shards, shard_results, strict=True):
        if layout.name in present or result.primary is None:
            continue
        mongos.admin_command(cmd.add_shard(layout))
        actions.append(f"addShard {layout.name}")
        present = present | {layout.name}
    added = sum(layout.name in present for layout in shards)
    ready = added == len(shards) and all(r.ready for r in shard_results)
    reason = "Ready" if ready else f"WaitingForShards {added}/{len(shards)}"
    return SetupResult(ready, reason, "", None, tuple(actions))


def ensure_sharded_cluster(
    config_servers: tuple[ReplicaSetLayout, Sequence[AdminClient]],
    shards: Sequence[tuple[ReplicaSetLayout, Sequence[AdminClient]]],
    mongos: AdminClient,
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> SetupResult:
    """Config-server set, then every shard set, then mongos (only once config has a primary)."""
    cfg_layout, cfg_clients = config_servers
    cfg = ensure_replica_set(cfg_layout, cfg_clients, sleep=sleep)
    results = [ensure_replica_set(layout, clients, sleep=sleep) for layout, clients in shards]
    actions = [*cfg.actions, *(a for r in results for a in r.actions)]
    if cfg.primary is None:
        return SetupResult(False, "WaitingForConfigServers", cfg.reason, None, tuple(actions))
    routed = ensure_shards([layout for layout, _ in shards], results, mongos)
    actions.extend(routed.actions)
    if not cfg.ready:
        return SetupResult(False, "WaitingForConfigServers", cfg.reason, None, tuple(actions))
    return SetupResult(routed.ready, routed.reason, routed.message, None, tuple(actions))


def ensure_root_user(client: AdminClient, user: str, password: str) -> bool:
    """Create the root user when usersInfo does not list it; True when created."""
    if client.admin_command(cmd.users_info(user)).get("users"):
        return False
    client.admin_command(cmd.create_root_user(user, password))
    return True


def ensure_monitor_user(client: AdminClient, user: str, password: str) -> bool:
    """Create the shard-local monitoring user when usersInfo does not list it; True
    when created. `client` reaches the shard's primary (a replica-set connection)."""
    if client.admin_command(cmd.users_info(user)).get("users"):
        return False
    client.admin_command(cmd.create_monitor_user(user, password))
    return True


def ensure_default_write_concern(client: AdminClient, durability: str) -> bool:
    """Set the profile's default write concern on a replica set or cluster; True when set."""
    if cmd.default_write_concern_matches(
        client.admin_command(cmd.GET_DEFAULT_RW_CONCERN), durability
    ):
        return False
    client.admin_command(cmd.set_default_write_concern(durability))
    return True
