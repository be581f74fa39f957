"""Per-shard storage statistics against a real sharded cluster (mongod + mongos).

Gated on MONGODB_BIN_DIR (tests/fixtures/mongod.py): FerretDB has no
sharding, and MongoDB cannot be installed on the development machines, so
without it this skips with that reason. Elsewhere the commands and answer
shapes are checked in tests/unit/runner/drivers/test_mongodb_distribution.py.
Here: the distribution the runner reads through mongos is what each shard
holds, counted on the shard itself, and the chunks are the config servers'.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pymongo
import pytest

from dbbench_operator.specs.databases.target_names import MONGO_PORT, ReplicaSetLayout
from dbbench_operator.targets.mongodb import client
from dbbench_operator.targets.mongodb.setup import (
    SetupResult,
    ensure_replica_set,
    ensure_sharded_cluster,
)
from dbbench_operator.targets.mongodb.sharding import ensure_sharded_collection
from dbbench_runner.drivers.mongodb_distribution import read_distribution
from tests.fixtures.mongod import MongoProcesses

pytestmark = pytest.mark.integration
DOCUMENTS = 3000


def _rs(name: str, hosts: list[str], configsvr: bool = False) -> ReplicaSetLayout:
    return ReplicaSetLayout(name, name, name, len(hosts), MONGO_PORT, "local",
                            configsvr=configsvr, explicit_hosts=tuple(hosts))  # fmt: skip


def _until_ready(step: Callable[[], SetupResult]) -> SetupResult:
    deadline = time.monotonic() + 90
    result = step()
    while not result.ready and time.monotonic() < deadline:
        time.sleep(0.5)
        result = step()
    return result


def test_each_shards_figures_are_what_the_shard_holds(mongo_processes: MongoProcesses) -> None:
    start, mongod = mongo_processes.start, mongo_processes.mongod
    cfg_hosts = [start(mongod, "--replSet=cfg", "--configsvr")]
    shard_hosts = [[start(mongod, f"--replSet=shard{i}", "--shardsvr")] for i in range(2)]
    connect: Any = client.connect
    cfg = (_rs("cfg", cfg_hosts, configsvr=True), [connect(h, username=None, password=None)
                                                   for h in cfg_hosts])  # fmt: skip
    assert _until_ready(lambda: ensure_replica_set(*cfg)).ready
    mongos_host = start(mongo_processes.mongos, f"--configdb=cfg/{cfg_hosts[0]}")
    shards = [(_rs(f"shard{i}", h), [connect(x, username=None, password=None) for x in h])
              for i, h in enumerate(shard_hosts)]  # fmt: skip
    router_admin = connect(mongos_host, username=None, password=None, direct=False)
    assert _until_ready(lambda: ensure_sharded_cluster(cfg, shards, router_admin)).ready
    ensure_sharded_collection(router_admin, "bench", "records")
    router: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(f"mongodb://{mongos_host}/")
    try:
        router["bench"]["records"].insert_many([{"_id": n, "v": "x" * 100}
                                                for n in range(DOCUMENTS)])  # fmt: skip
        found = read_distribution(router, "bench", "records")
        assert [s.shard for s in found] == ["shard0", "shard1"]
        assert sum(s.documents for s in found) == DOCUMENTS
        for shard, hosts in zip(found, shard_hosts, strict=True):
            own: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(
                hosts[0], directConnection=True
            )
            try:
                assert shard.documents == own["bench"]["records"].count_documents({})
            finally:
                own.close()
            assert shard.data_bytes > 0
            assert shard.index_bytes > 0
        entry = router["config"]["collections"].find_one({"_id": "bench.records"})
        assert entry is not None
        chunks = router["config"]["chunks"].count_documents({"uuid": entry["uuid"]})
        assert sum(s.chunks or 0 for s in found) == chunks
    finally:
        router.close()
