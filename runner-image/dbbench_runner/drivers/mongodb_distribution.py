"""How a sharded target's collection is spread over its shards, at each storage sample.

Three commands, all through the router the runner talks to (mongos), so they
see the cluster as its clients do:

1. on the benchmark database, `aggregate` with `$collStats: {storageStats}`:
   one document per shard holding the collection, each with the shard's own
   count, data size, on-disk size and index size (the stage that replaces the
   `collStats` command, deprecated since MongoDB 6.2);
2. on `config`, `find` the collection's entry in `config.collections` (its
   uuid: since MongoDB 5.0 chunks name their collection by uuid, before by
   namespace);
3. on `config`, `aggregate` over `config.chunks` matching that uuid or the
   namespace, grouped by shard: how many chunks the config servers place on
   each shard.

The answers become one `ShardStorage` per shard (`distribution`). A user
without read access to `config` (an external cluster) still gets the shards'
own statistics, with chunks unknown; a router that refuses `$collStats` gives
no distribution, never an invented one. Pure but for `read_distribution`,
which takes a client whose `database.command(document)` sends a command.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pymongo.errors import OperationFailure

from dbbench_contract.shard_storage import ShardStorage

CONFIG_DATABASE = "config"


def collstats_command(collection: str) -> dict[str, Any]:
    """Each shard's statistics of `collection` (only the fields kept: a storageStats
    document also carries WiredTiger's whole configuration, kilobytes per shard)."""
    return {
        "aggregate": collection,
        "pipeline": [
            {"$collStats": {"storageStats": {}}},
            {"$project": {
                "_id": 0, "shard": 1, "count": "$storageStats.count",
                "size": "$storageStats.size", "storageSize": "$storageStats.storageSize",
                "totalIndexSize": "$storageStats.totalIndexSize",
            }},
        ],
        "cursor": {},
    }  # fmt: skip


def collection_entry_command(namespace: str) -> dict[str, Any]:
    """The collection's entry in config.collections (absent: not sharded)."""
    return {
        "find": "collections",
        "filter": {"_id": namespace},
        "projection": {"_id": 1, "uuid": 1},
        "limit": 1,
    }


def chunks_command(namespace: str, uuid: Any) -> dict[str, Any]:
    """Chunks per shard of one collection: by uuid (MongoDB 5.0+) or namespace (before;
    its entry has a uuid too, its chunks only the namespace)."""
    return {
        "aggregate": "chunks",
        "pipeline": [
            {"$match": {"$or": [{"uuid": uuid}, {"ns": namespace}]}},
            {"$group": {"_id": "$shard", "chunks": {"$sum": 1}}},
        ],
        "cursor": {},
    }


def first_batch(reply: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The documents of a cursor reply (one per shard: always within the first batch)."""
    return [dict(d) for d in (reply.get("cursor") or {}).get("firstBatch") or []]


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) else 0


def distribution(
    collstats: Sequence[Mapping[str, Any]], chunks: Sequence[Mapping[str, Any]] | None
) -> tuple[ShardStorage, ...]:
    """One ShardStorage per shard named by either answer, in shard-name order.

    `chunks` None: config.chunks could not be read (chunks unknown on every shard);
    a shard with chunks but no statistics (it holds none of the data yet) counts 0.
    """
    stats = {str(d.get("shard", "")): d for d in collstats}
    placed = {str(d.get("_id", "")): _int(d.get("chunks")) for d in chunks or ()}
    names = sorted({*stats, *placed} - {""})
    out = []
    for name in names:
        part = stats.get(name, {})
        index = _int(part.get("totalIndexSize"))
        out.append(ShardStorage(
            shard=name,
            documents=_int(part.get("count")),
            data_bytes=_int(part.get("size")),
            index_bytes=index,
            storage_bytes=_int(part.get("storageSize")) + index,
            chunks=None if chunks is None else placed.get(name, 0),
        ))  # fmt: skip
    return tuple(out)


def _chunks(client: Any, namespace: str) -> list[dict[str, Any]] | None:
    """Chunks per shard; None when unknown: no read access to config (the shards'
    own figures then stand alone), or a collection the config servers do not
    track (not sharded: it lives whole on its database's primary shard)."""
    config = client[CONFIG_DATABASE]
    try:
        entry = first_batch(config.command(collection_entry_command(namespace)))
        if not entry or entry[0].get("uuid") is None:
            return None
        return first_batch(config.command(chunks_command(namespace, entry[0]["uuid"])))
    except OperationFailure:
        return None


def read_distribution(client: Any, database: str, collection: str) -> tuple[ShardStorage, ...]:
    """The collection's distribution over the shards, through the router `client`."""
    try:
        stats = first_batch(client[database].command(collstats_command(collection)))
    except OperationFailure:
        # Before the first insert (NamespaceNotFound), or a router refusing the stage.
        return ()
    return distribution(stats, _chunks(client, f"{database}.{collection}"))
