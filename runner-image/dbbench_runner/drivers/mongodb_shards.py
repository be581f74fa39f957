"""What a MongoDB server says about itself, and a sharded target's shards.

Through mongos the runner talks to a router: it has no storage engine and no
cache, and its command line is the router's. The settings in force, the
engine's cache and the version of the servers that hold the data are each
shard's own: the runner lists the shards through mongos (`listShards`),
connects to each shard's replica set (so to its primary) with the target's
credentials and reads `buildInfo`, `getCmdLineOpts` and `serverStatus` there.
For a deployed target the operator creates that user on every shard, with the
clusterMonitor role only (docs/topologies.md). A shard that cannot be read is
recorded with the error's type, never filled in from another.

Clients are pymongo's `MongoClient` or, in the tests, a recording fake: only
`client.admin.command(name)` and `close()` are used.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pymongo.errors import OperationFailure, PyMongoError

from dbbench_runner.drivers.base import ShardInfo

# hello's `msg` on a mongos (MongoDB's wire protocol: "is db grid").
ROUTER_MESSAGE = "isdbgrid"
# Options that name how to reach the router; a shard's client sets its own.
_ROUTER_OPTIONS = frozenset(
    {"replicaset", "directconnection", "loadbalanced", "srvservicename", "srvmaxhosts"}
)
ConnectShard = Callable[[str], Any]  # a shard's URI -> a client (closed by the caller)


def error_name(exc: PyMongoError) -> str:
    """The error's type and code only: pymongo's text names hosts and users."""
    code = getattr(exc, "code", None)
    return f"{type(exc).__name__}({code})" if code is not None else type(exc).__name__


def is_router(client: Any) -> bool:
    """True when the server is a mongos (FerretDB and mongod answer hello without it)."""
    try:
        reply = client.admin.command("hello")
    except OperationFailure:
        return False
    return bool(reply.get("msg") == ROUTER_MESSAGE)


def server_settings(client: Any) -> tuple[dict[str, str], int | None]:
    """(settings in force, WiredTiger cache bytes) of the server the client talks to.

    Managed services may refuse getCmdLineOpts or serverStatus: the run still
    has the version, and the settings say why they are missing."""
    settings: dict[str, str] = {}
    cache: int | None = None
    try:
        options = client.admin.command("getCmdLineOpts")
        settings["cmdLine"] = str(options.get("parsed", {}))
        status = client.admin.command("serverStatus")
        configured = status.get("wiredTiger", {}).get("cache", {})
        cache = configured.get("maximum bytes configured")
        # Empty on a router: it has no storage engine.
        settings["storageEngine"] = str(status.get("storageEngine", {}).get("name", ""))
    except OperationFailure as exc:
        settings["unavailable"] = str(exc)
    return settings, int(cache) if cache is not None else None


def version(build_info: Mapping[str, Any]) -> str:
    found = str(build_info.get("version", "unknown"))
    if "ferretdbVersion" in build_info:
        # A MongoDB-protocol stand-in reports a MongoDB version it is not.
        found = f"{found} (FerretDB {build_info['ferretdbVersion']})"
    return found


def shard_uri(uri: str, hosts: str, replica_set: str | None) -> str:
    """The router's URI (its user, database and options) pointed at one shard's
    replica set: its members instead of the router's address, the shard's
    replicaSet (None: a one-server shard) instead of any routing option. A
    mongodb+srv URI implies TLS, which the shard's plain URI must then say."""
    scheme, _, rest = uri.partition("://")
    authority, _, path_query = rest.partition("/")
    userinfo = authority.rpartition("@")[0]
    path, _, query = path_query.partition("?")
    kept = [p for p in query.split("&") if p and p.split("=")[0].lower() not in _ROUTER_OPTIONS]
    names = {p.split("=")[0].lower() for p in kept}
    if scheme == "mongodb+srv" and not names & {"tls", "ssl"}:
        kept.append("tls=true")
    if replica_set is not None:
        kept.append(f"replicaSet={replica_set}")
    login = f"{userinfo}@" if userinfo else ""
    options = f"?{'&'.join(kept)}" if kept else ""
    return f"mongodb://{login}{hosts}/{path}{options}"


def _read_shard(name: str, hosts: str, uri: str, connect: ConnectShard) -> ShardInfo:
    replica_set: str | None
    replica_set, _, members = hosts.partition("/")
    if not members:  # a one-server shard (never the operator's): "host:port"
        replica_set, members = None, hosts
    try:
        client = connect(shard_uri(uri, members, replica_set))
        try:
            found = version(client.admin.command("buildInfo"))
            settings, cache = server_settings(client)
        finally:
            client.close()
    except PyMongoError as exc:
        return ShardInfo(name=name, hosts=hosts, error=error_name(exc))
    return ShardInfo(name, hosts, found, settings, cache)


def read_shards(router: Any, uri: str, connect: ConnectShard) -> tuple[ShardInfo, ...]:
    """Every shard listShards names, each read on its own servers."""
    try:
        listed: Sequence[Mapping[str, Any]] = router.admin.command("listShards").get("shards", [])
    except OperationFailure as exc:
        return (ShardInfo(name="?", hosts="", error=error_name(exc)),)
    return tuple(
        _read_shard(str(shard["_id"]), str(shard.get("host", "")), uri, connect) for shard in listed
    )


def common_settings(shards: Sequence[ShardInfo]) -> dict[str, str]:
    """The settings every shard that was read shares, with the same value."""
    read = [s.settings for s in shards if s.error is None]
    if not read:
        return {"unavailable": ", ".join(f"{s.name}: {s.error}" for s in shards) or "no shards"}
    return {k: v for k, v in read[0].items() if all(other.get(k) == v for other in read[1:])}


def total_cache(shards: Sequence[ShardInfo]) -> int | None:
    """The shards' caches together (each shard's primary caches its part of the
    data); None unless every shard's is known."""
    caches = [s.cache_bytes for s in shards]
    if not caches or any(c is None for c in caches):
        return None
    return sum(c for c in caches if c is not None)
