"""A sharded target's per-shard storage, on the exact commands and captured answers.

No mongos runs here (FerretDB has no sharding; the real one is exercised with
MONGODB_BIN_DIR in tests/integration/runner/test_shard_distribution_mongod.py).
What is checked: the commands the driver sends through the router at a storage
sample, word for word; and how answers of the shapes MongoDB gives become each
shard's documents, data, index and chunks. The answers are the documents
MongoDB's manual shows for `$collStats` (storageStats) and `config.chunks`;
the pipeline's own `$project`, `$match` and `$group` are applied to them here
by a few lines of Python, so a wrong field path or filter fails the test.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from bson import ObjectId, Timestamp
from bson.binary import Binary, UuidRepresentation
from pymongo.errors import OperationFailure

from dbbench_contract.shard_storage import ShardStorage
from dbbench_runner.config import StepConfig, parse_config
from dbbench_runner.datasets import generator_for
from dbbench_runner.drivers.mongodb import MongoDriver
from dbbench_runner.drivers.mongodb_distribution import (
    chunks_command,
    collstats_command,
    distribution,
    first_batch,
)

COLLECTION_UUID = Binary.from_uuid(
    uuid.UUID("8a8e3c57-2f56-4d53-9b5e-9f9a1c0e3f11"), UuidRepresentation.STANDARD
)
OTHER_UUID = Binary.from_uuid(
    uuid.UUID("0b7d1d3e-51a4-4c59-8f3b-41d0c8d2a7e2"), UuidRepresentation.STANDARD
)


def collstats_document(shard: str, count: int, size: int, storage: int, index: int) -> Any:
    """One shard's $collStats {storageStats: {}} answer through mongos (the manual's shape)."""
    return {
        "ns": "bench.indexed4_serverkey",
        "shard": shard,
        "host": f"{shard}-0.{shard}.perf.svc.cluster.local:27017",
        "localTime": datetime(2025, 3, 1, 12, 0, tzinfo=UTC),
        "storageStats": {
            "size": size, "count": count, "avgObjSize": size // max(count, 1),
            "numOrphanDocs": 0, "storageSize": storage, "freeStorageSize": 4096,
            "capped": False,
            "wiredTiger": {"metadata": {"formatVersion": 1}, "creationString": "x" * 200,
                           "type": "file", "uri": "statistics:table:collection-7"},
            "nindexes": 2, "indexDetails": {"_id_": {}, "_id_hashed": {}},
            "indexBuilds": [], "totalIndexSize": index, "totalSize": storage + index,
            "indexSizes": {"_id_": index // 2, "_id_hashed": index - index // 2},
            "scaleFactor": 1,
        },
    }  # fmt: skip


def chunk(shard: str, uuid: Binary | None, ns: str | None = None, n: int = 0) -> dict[str, Any]:
    """A config.chunks document: MongoDB 5.0+ names the collection by uuid, before by ns."""
    document: dict[str, Any] = {
        "_id": ObjectId(), "min": {"_id": -(2**62) + n}, "max": {"_id": -(2**62) + n + 1},
        "shard": shard, "lastmod": Timestamp(1, n), "history": [
            {"validAfter": Timestamp(1740000000, 1), "shard": shard}],
    }  # fmt: skip
    if uuid is not None:
        document["uuid"] = uuid
    if ns is not None:
        document["ns"] = ns
    return document


def _path(document: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        document = document.get(part) if isinstance(document, dict) else None
    return document


def _matches(document: dict[str, Any], query: dict[str, Any]) -> bool:
    if "$or" in query:
        return any(_matches(document, q) for q in query["$or"])
    return all(k in document and document[k] == v for k, v in query.items())


def _project(document: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    """Inclusion (1), exclusion (0) and "$field.path" expressions."""
    out: dict[str, Any] = {}
    for key, value in spec.items():
        if isinstance(value, str) and value.startswith("$"):
            out[key] = _path(document, value[1:])
        elif value == 1 and key in document:
            out[key] = document[key]
    return out


def run_pipeline(documents: list[dict[str, Any]], pipeline: list[Any]) -> list[dict[str, Any]]:
    """The stages these commands use, as the server applies them (after the source)."""
    out = list(documents)
    for stage in pipeline:
        ((name, spec),) = stage.items()
        if name == "$collStats":
            continue  # the source: `documents` are its answers
        if name == "$project":
            out = [_project(d, spec) for d in out]
        elif name == "$match":
            out = [d for d in out if _matches(d, spec)]
        elif name == "$group":
            assert spec == {"_id": "$shard", "chunks": {"$sum": 1}}
            counts: dict[str, int] = {}
            for d in out:
                counts[d["shard"]] = counts.get(d["shard"], 0) + 1
            out = [{"_id": k, "chunks": v} for k, v in counts.items()]
        else:
            raise AssertionError(f"unexpected stage {name}")
    return out


def cursor(documents: list[dict[str, Any]], ns: str) -> dict[str, Any]:
    return {"cursor": {"firstBatch": documents, "id": 0, "ns": ns}, "ok": 1.0}


SHARDS = [
    collstats_document("shard0", 66_512, 68_108_288, 34_623_488, 4_308_992),
    collstats_document("shard1", 66_901, 68_506_624, 34_811_904, 4_329_472),
    collstats_document("shard2", 66_587, 68_185_088, 34_660_352, 4_313_088),
]
CHUNKS = [
    *(chunk(f"shard{i % 3}", COLLECTION_UUID, n=i) for i in range(7)),
    *(chunk("shard0", OTHER_UUID, n=i) for i in range(5)),  # another collection's
]


class Router:
    """A fake pymongo client of a mongos: answers `db.command(document)` with what
    the server would, from the captured documents; records every command sent."""

    router = True  # hello says "isdbgrid"

    def __init__(self, uri: str, **kwargs: Any) -> None:
        self.sent: list[tuple[str, Any]] = []
        self.refuse_config = False
        self.entry: list[dict[str, Any]] = [{"_id": "bench.indexed4_serverkey",
                                             "uuid": COLLECTION_UUID}]  # fmt: skip
        self.admin = _Db(self, "admin")
        Router.last = self

    last: Router

    def __getitem__(self, name: str) -> _Db:
        return _Db(self, name)

    def close(self) -> None:
        pass


class _Db:
    def __init__(self, router: Router, name: str) -> None:
        self.router, self.name = router, name

    def __getitem__(self, name: str) -> Any:
        return _Handle()

    def command(self, command: Any, *args: Any) -> dict[str, Any]:
        self.router.sent.append((self.name, command if not args else (command, *args)))
        if command == "ping":
            return {"ok": 1.0}
        if command == "hello":
            return {"isWritablePrimary": True, "ok": 1.0} | (
                {"msg": "isdbgrid"} if self.router.router else {}
            )
        if command == "collStats":
            return {"sharded": True, "size": 1, "count": 1, "storageSize": 1,
                    "totalIndexSize": 1, "ok": 1.0}  # fmt: skip
        if self.name == "config" and self.router.refuse_config:
            raise OperationFailure("not authorized on config", code=13)
        if "aggregate" in command and command["aggregate"] == "chunks":
            return cursor(run_pipeline(CHUNKS, command["pipeline"]), "config.chunks")
        if "aggregate" in command:
            return cursor(run_pipeline(SHARDS, command["pipeline"]), "bench.x")
        if "find" in command:
            return cursor(self.router.entry, "config.collections")
        raise AssertionError(f"unexpected command {command}")


class _Handle:
    def with_options(self, **_: Any) -> _Handle:
        return self


def step() -> StepConfig:
    return parse_config({
        "target": {"name": "sharded", "engine": "mongodb", "uri": "mongodb://localhost:27017/",
                   "database": "bench", "connectRetries": 1},
        "dataset": {"shape": "indexed4", "records": 200_000},
        "phase": {"name": "q", "type": "query", "idMode": "server", "operations": 10,
                  "queries": ["indexedEquality"]},
    })  # fmt: skip


def driver() -> MongoDriver:
    config = step()
    return MongoDriver.connect(config, generator_for(config.dataset, "server"), Router)


def test_a_storage_sample_sends_these_commands_through_the_router() -> None:
    sampling = driver()
    sample = sampling.storage()
    sent = [s for s in Router.last.sent if s[1] not in ("ping",)]
    assert sent == [
        ("bench", ("collStats", "indexed4_serverkey")),
        ("admin", "hello"),  # once: is this a router?
        ("bench", {"aggregate": "indexed4_serverkey", "pipeline": [
            {"$collStats": {"storageStats": {}}},
            {"$project": {"_id": 0, "shard": 1, "count": "$storageStats.count",
                          "size": "$storageStats.size",
                          "storageSize": "$storageStats.storageSize",
                          "totalIndexSize": "$storageStats.totalIndexSize"}}],
            "cursor": {}}),
        ("config", {"find": "collections", "filter": {"_id": "bench.indexed4_serverkey"},
                    "projection": {"_id": 1, "uuid": 1}, "limit": 1}),
        ("config", {"aggregate": "chunks", "pipeline": [
            {"$match": {"$or": [{"uuid": COLLECTION_UUID},
                                {"ns": "bench.indexed4_serverkey"}]}},
            {"$group": {"_id": "$shard", "chunks": {"$sum": 1}}}], "cursor": {}}),
    ]  # fmt: skip
    assert len(sample.shards) == 3
    sampling.storage()  # the next sample does not ask again whether this is a router
    assert [c for _, c in Router.last.sent].count("hello") == 1


def test_each_shards_documents_sizes_and_chunks_from_the_answers() -> None:
    shards = driver().storage().shards
    assert shards == (
        ShardStorage(shard="shard0", documents=66_512, data_bytes=68_108_288,
                     index_bytes=4_308_992, storage_bytes=34_623_488 + 4_308_992, chunks=3),
        ShardStorage(shard="shard1", documents=66_901, data_bytes=68_506_624,
                     index_bytes=4_329_472, storage_bytes=34_811_904 + 4_329_472, chunks=2),
        ShardStorage(shard="shard2", documents=66_587, data_bytes=68_185_088,
                     index_bytes=4_313_088, storage_bytes=34_660_352 + 4_313_088, chunks=2),
    )  # fmt: skip
    # Another collection's five chunks on shard0 are not this one's.
    assert sum(s.chunks or 0 for s in shards) == 7


def test_chunks_of_a_server_before_5_0_are_found_by_namespace() -> None:
    ns = "bench.indexed4_serverkey"
    old = [chunk("shard0", None, ns=ns, n=1), chunk("shard1", None, ns=ns, n=2),
           chunk("shard1", None, ns="bench.other", n=3)]  # fmt: skip
    answered = run_pipeline(old, chunks_command(ns, COLLECTION_UUID)["pipeline"])
    assert sorted((d["_id"], d["chunks"]) for d in answered) == [("shard0", 1), ("shard1", 1)]


def test_without_read_access_to_config_the_chunks_are_unknown() -> None:
    sample_driver = driver()
    Router.last.refuse_config = True
    shards = sample_driver.storage().shards
    assert [(s.shard, s.documents, s.chunks) for s in shards] == [
        ("shard0", 66_512, None), ("shard1", 66_901, None), ("shard2", 66_587, None)
    ]  # fmt: skip


def test_a_collection_the_config_servers_do_not_track_has_no_chunk_counts() -> None:
    sample_driver = driver()
    Router.last.entry = []  # not sharded: no entry in config.collections
    assert {s.chunks for s in sample_driver.storage().shards} == {None}
    assert not any("aggregate" in c and c["aggregate"] == "chunks"
                   for _, c in Router.last.sent if isinstance(c, dict))  # fmt: skip


def test_a_shard_with_chunks_but_no_documents_yet_counts_zero() -> None:
    stats = [{"shard": "shard0", "count": 10, "size": 100, "storageSize": 50,
              "totalIndexSize": 20}]  # fmt: skip
    found = distribution(stats, [{"_id": "shard0", "chunks": 1}, {"_id": "shard1", "chunks": 1}])
    assert [(s.shard, s.documents, s.chunks) for s in found] == [
        ("shard0", 10, 1), ("shard1", 0, 1)
    ]  # fmt: skip
    assert first_batch({"ok": 1.0}) == []


def test_a_server_that_is_no_router_sends_nothing_more() -> None:
    class Mongod(Router):
        router = False

    config = step()
    sample = MongoDriver.connect(config, generator_for(config.dataset, "server"), Mongod).storage()
    assert sample.shards == ()
    assert [c for _, c in Router.last.sent if isinstance(c, dict)] == []


def test_the_collstats_pipeline_keeps_only_the_figures() -> None:
    projected = run_pipeline(SHARDS[:1], collstats_command("c")["pipeline"])
    assert projected == [{"shard": "shard0", "count": 66_512, "size": 68_108_288,
                          "storageSize": 34_623_488, "totalIndexSize": 4_308_992}]  # fmt: skip
