"""Shard the benchmark's collection through mongos, before any step inserts.

Without it every document lands on the database's primary shard and a
"sharded" target measures one shard behind a router. Idempotent: the
collection's entry in config.collections is read first, so a pass over a
collection already sharded on the wanted key sends reads only; one sharded on
another key is an error, never taken for success.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from dbbench_operator.targets.mongodb import commands as cmd
from dbbench_operator.targets.mongodb.setup import AdminClient, CommandFailedError


class ClusterClient(AdminClient, Protocol):
    """A mongos client that can also run a command on another database (config)."""

    def database_command(self, database: str, command: Mapping[str, Any]) -> dict[str, Any]: ...


class ShardKeyMismatchError(Exception):
    """The collection is already sharded on a different key: results would not compare."""


@dataclass(frozen=True)
class ShardedCollection:
    key: str  # e.g. "_id: hashed", as the status and the results show it
    actions: tuple[str, ...] = ()


def describe_key(key: Mapping[str, Any]) -> str:
    """{_id: "hashed"} -> "_id: hashed" (compound keys joined with ", ")."""
    return ", ".join(f"{field}: {kind}" for field, kind in key.items())


def _current_key(mongos: ClusterClient, namespace: str) -> dict[str, Any] | None:
    reply = mongos.database_command("config", cmd.find_sharded_collection(namespace))
    for doc in reply.get("cursor", {}).get("firstBatch", []):
        # Before MongoDB 5.0 a dropped collection kept its entry, marked dropped.
        if not doc.get("dropped"):
            return dict(doc.get("key") or {})
    return None


def _check(namespace: str, current: Mapping[str, Any], wanted: Mapping[str, Any]) -> None:
    if dict(current) == dict(wanted):
        return
    field = next(iter(wanted))
    raise ShardKeyMismatchError(
        f"{namespace} is already sharded on {{{describe_key(current)}}}, not "
        f"{{{describe_key(wanted)}}}: drop the collection through mongos "
        f"(db.getSiblingDB('{namespace.split('.', 1)[0]}').{namespace.split('.', 1)[1]}.drop()) "
        f"or set the target's shardKey to the existing key (now {field})"
    )


def ensure_sharded_collection(
    mongos: ClusterClient, database: str, collection: str, key: str = "_id"
) -> ShardedCollection:
    """Shard `database.collection` hashed on `key` unless it already is; see module doc."""
    namespace = f"{database}.{collection}"
    wanted = cmd.shard_collection(database, collection, key)["key"]
    current = _current_key(mongos, namespace)
    if current is not None:
        _check(namespace, current, wanted)
        return ShardedCollection(describe_key(wanted))
    try:
        mongos.admin_command(cmd.enable_sharding(database))
    except CommandFailedError as exc:
        if exc.code != cmd.ALREADY_INITIALIZED:  # MongoDB < 6.0 when already enabled
            raise
    try:
        mongos.admin_command(cmd.shard_collection(database, collection, key))
    except CommandFailedError as exc:
        if exc.code != cmd.ALREADY_INITIALIZED:
            raise
        # Sharded meanwhile (another pass): success only on the wanted key.
        current = _current_key(mongos, namespace)
        _check(namespace, current or {}, wanted)
    return ShardedCollection(describe_key(wanted), (f"shardCollection {namespace}",))
