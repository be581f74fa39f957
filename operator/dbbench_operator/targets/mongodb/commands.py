"""Exact MongoDB command documents for setup, and how to read their replies.

Pure: layouts in, command documents (ordered dicts: the first key names the
command) out; reply documents in, typed verdicts out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dbbench_operator.specs.databases.sizing import MONGO_DEFAULT_WRITE_CONCERN
from dbbench_operator.specs.databases.target_names import ReplicaSetLayout

# Server error codes the setup treats specially.
ALREADY_INITIALIZED = 23
NODE_NOT_FOUND = 74
NOT_YET_INITIALIZED = 94
HEALTHY_STATES = frozenset({"PRIMARY", "SECONDARY", "ARBITER"})

PING: dict[str, Any] = {"ping": 1}
REPL_SET_GET_STATUS: dict[str, Any] = {"replSetGetStatus": 1}
LIST_SHARDS: dict[str, Any] = {"listShards": 1}
GET_DEFAULT_RW_CONCERN: dict[str, Any] = {"getDefaultRWConcern": 1}


def repl_set_initiate(replica_set: ReplicaSetLayout) -> dict[str, Any]:
    """replSetInitiate with every member; config servers say so."""
    config: dict[str, Any] = {"_id": replica_set.name}
    if replica_set.configsvr:
        config["configsvr"] = True
    config["members"] = [
        {"_id": ordinal, "host": host} for ordinal, host in enumerate(replica_set.hosts)
    ]
    return {"replSetInitiate": config}


def shard_connection_string(replica_set: ReplicaSetLayout) -> str:
    return f"{replica_set.name}/{','.join(replica_set.hosts)}"


def add_shard(replica_set: ReplicaSetLayout) -> dict[str, Any]:
    return {"addShard": shard_connection_string(replica_set), "name": replica_set.name}


def enable_sharding(database: str) -> dict[str, Any]:
    return {"enableSharding": database}


def shard_collection(database: str, collection: str, key: str = "_id") -> dict[str, Any]:
    """Hashed on the key, so client-supplied monotonic ids spread over every shard."""
    return {"shardCollection": f"{database}.{collection}", "key": {key: "hashed"}}


def find_sharded_collection(namespace: str) -> dict[str, Any]:
    """On the config database: the collection's sharding entry (its key), if any."""
    return {"find": "collections", "filter": {"_id": namespace}, "limit": 1}


def users_info(user: str) -> dict[str, Any]:
    return {"usersInfo": {"user": user, "db": "admin"}}


def create_root_user(user: str, password: str) -> dict[str, Any]:
    return {"createUser": user, "pwd": password, "roles": [{"role": "root", "db": "admin"}]}


def create_monitor_user(user: str, password: str) -> dict[str, Any]:
    """A shard-local user that may read the shard's settings and status, nothing else
    (serverStatus, getCmdLineOpts: the runner's environment record)."""
    return {
        "createUser": user,
        "pwd": password,
        "roles": [{"role": "clusterMonitor", "db": "admin"}],
    }


def set_default_write_concern(durability: str) -> dict[str, Any]:
    """The durability profile as the cluster-wide default (a phase may still override)."""
    return {
        "setDefaultRWConcern": 1,
        "defaultWriteConcern": dict(MONGO_DEFAULT_WRITE_CONCERN[durability]),
    }


def default_write_concern_matches(reply: Mapping[str, Any], durability: str) -> bool:
    current = reply.get("defaultWriteConcern") or {}
    wanted = MONGO_DEFAULT_WRITE_CONCERN[durability]
    return all(current.get(key) == value for key, value in wanted.items())


@dataclass(frozen=True)
class ReplicaSetHealth:
    ready: bool
    reason: str  # Ready | WaitingForPrimary | WaitingForMembers k/n
    primary: str | None
    healthy: int
    expected: int


def interpret_status(reply: Mapping[str, Any], expected: int) -> ReplicaSetHealth:
    """Ready = exactly one PRIMARY and every other expected member a healthy SECONDARY."""
    members: Sequence[Mapping[str, Any]] = reply.get("members", [])
    primaries = [m for m in members if m.get("stateStr") == "PRIMARY" and m.get("health") == 1]
    healthy = [m for m in members if m.get("stateStr") in HEALTHY_STATES and m.get("health") == 1]
    primary = str(primaries[0]["name"]) if len(primaries) == 1 else None
    if len(primaries) != 1:
        return ReplicaSetHealth(False, "WaitingForPrimary", None, len(healthy), expected)
    if len(healthy) < expected:
        return ReplicaSetHealth(
            False, f"WaitingForMembers {len(healthy)}/{expected}", primary, len(healthy), expected
        )
    return ReplicaSetHealth(True, "Ready", primary, len(healthy), expected)


def shard_names(reply: Mapping[str, Any]) -> frozenset[str]:
    """Names of the shards a listShards reply lists."""
    return frozenset(str(shard["_id"]) for shard in reply.get("shards", []))
