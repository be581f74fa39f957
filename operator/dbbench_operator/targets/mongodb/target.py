"""One setup pass over a deployed MongoDB target, whatever its topology.

Builds a client per member from the layout, runs the idempotent steps of
`mongo_setup` in order, and closes the clients. Which identity is used:

- standalone / replicaSet: the root user, created by the official image's
  entrypoint from the run's Secret before the first start;
- sharded: the internal `__system` identity with the keyFile as password,
  because the entrypoint cannot create users on --configsvr/--shardsvr
  members; this pass then creates the root user through mongos, and the same
  user on each shard (shard-local, clusterMonitor only) for the runner to read
  the shards' own settings and cache.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from dbbench_operator.specs.databases import target_names
from dbbench_operator.specs.databases.request import TopologyRequest
from dbbench_operator.targets.mongodb import client as mongo_client
from dbbench_operator.targets.mongodb.setup import (
    SetupResult,
    UnreachableError,
    ensure_default_write_concern,
    ensure_monitor_user,
    ensure_replica_set,
    ensure_root_user,
    ensure_sharded_cluster,
)
from dbbench_operator.targets.mongodb.sharding import ClusterClient, ensure_sharded_collection

Connect = Callable[..., Any]


@dataclass(frozen=True)
class MongoCredentials:
    username: str
    password: str = field(repr=False)
    keyfile: str = field(repr=False)


@dataclass
class _Clients:
    connect: Connect
    opened: list[Any] = field(default_factory=list)

    def member(
        self, host: str, creds: MongoCredentials, internal: bool, direct: bool = True
    ) -> Any:
        if internal:
            client = self.connect(
                host, username=mongo_client.INTERNAL_USER, password=creds.keyfile,
                auth_source=mongo_client.INTERNAL_AUTH_SOURCE, direct=direct,
            )  # fmt: skip
        else:
            client = self.connect(
                host, username=creds.username, password=creds.password, direct=direct
            )
        self.opened.append(client)
        return client

    def members(self, hosts: Sequence[str], creds: MongoCredentials, internal: bool) -> list[Any]:
        return [self.member(h, creds, internal) for h in hosts]


@contextmanager
def _clients(connect: Connect) -> Iterator[_Clients]:
    clients = _Clients(connect)
    try:
        yield clients
    finally:
        for client in clients.opened:
            close = getattr(client, "close", None)
            if close is not None:
                close()


def set_up_mongodb(
    request: TopologyRequest,
    creds: MongoCredentials,
    *,
    connect: Connect = mongo_client.connect,
) -> SetupResult:
    """One pass: initiate / add shards / create the root user / default write concern /
    shard every collection the run uses (sharded)."""
    layout = target_names.layout(request)
    with _clients(connect) as clients:
        try:
            if request.topology == "sharded":
                return _sharded(request, layout, creds, clients)
            return _replica_set(request, layout, creds, clients)
        except UnreachableError as exc:
            return SetupResult(False, "WaitingForDatabase", str(exc))


def _replica_set(
    request: TopologyRequest,
    layout: target_names.Layout,
    creds: MongoCredentials,
    clients: _Clients,
) -> SetupResult:
    (rs,) = layout.replica_sets
    members = clients.members(rs.hosts, creds, internal=False)
    if request.topology == "standalone":
        members[0].admin_command({"ping": 1})
        return SetupResult(True, "Ready")
    result = ensure_replica_set(rs, members)
    if result.ready and result.primary is not None:
        primary = clients.member(result.primary, creds, internal=False)
        ensure_default_write_concern(primary, request.durability)
    return result


def _sharded(
    request: TopologyRequest,
    layout: target_names.Layout,
    creds: MongoCredentials,
    clients: _Clients,
) -> SetupResult:
    if layout.config_servers is None:
        raise ValueError("a sharded layout has config servers")
    cfg = (layout.config_servers, clients.members(layout.config_servers.hosts, creds, True))
    shards = [(s, clients.members(s.hosts, creds, True)) for s in layout.shards]
    mongos: ClusterClient = clients.member(layout.endpoint, creds, True, direct=False)
    result = ensure_sharded_cluster(cfg, shards, mongos)
    if result.reason in {"WaitingForConfigServers", "WaitingForMongos"}:
        return result
    created = ensure_root_user(mongos, creds.username, creds.password)
    actions = (*result.actions, *(("createUser",) if created else ()))
    if not result.ready:
        return SetupResult(False, result.reason, result.message, None, actions)
    # Users made through mongos live on the config servers: the runner reads each
    # shard's own settings and cache (its environment record) as a shard-local user.
    for shard in layout.shards:
        primary = clients.member(",".join(shard.hosts), creds, True, direct=False)
        if ensure_monitor_user(primary, creds.username, creds.password):
            actions = (*actions, f"createUser {shard.name}")
    ensure_default_write_concern(mongos, request.durability)
    # Before the first step inserts: otherwise every document stays on one shard.
    # Every collection the phases use (client- and server-keyed), on the one key.
    key = ""
    for collection in request.collections:
        sharded = ensure_sharded_collection(mongos, request.database, collection, request.shard_key)
        actions, key = (*actions, *sharded.actions), sharded.key
    return SetupResult(True, result.reason, result.message, None, actions, key)
