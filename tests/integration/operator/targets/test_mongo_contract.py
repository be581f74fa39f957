"""Contract suite: the MongoDB setup against real mongod/mongos processes.

Needs MongoDB's own binaries (replSetInitiate, addShard, shardCollection and
users are what FerretDB lacks): gated on MONGODB_BIN_DIR, the one switch for
every test that needs a real mongod (tests/fixtures/mongod.py); without it
these skip with that reason. The probe also runs against FerretDB always.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from dbbench_operator.specs.databases.target_names import MONGO_PORT, ReplicaSetLayout
from dbbench_operator.targets.external import probe
from dbbench_operator.targets.mongodb import client
from dbbench_operator.targets.mongodb.setup import (
    SetupResult,
    ensure_replica_set,
    ensure_root_user,
    ensure_sharded_cluster,
)
from dbbench_operator.targets.mongodb.sharding import ensure_sharded_collection
from tests.fixtures.ferretdb import FerretDBServer
from tests.fixtures.mongod import MongoProcesses, StandaloneMongod

pytestmark = pytest.mark.integration


def _rs(name: str, hosts: list[str], configsvr: bool = False) -> ReplicaSetLayout:
    return ReplicaSetLayout(
        name, name, name, len(hosts), MONGO_PORT, "local", configsvr=configsvr,
        explicit_hosts=tuple(hosts),
    )  # fmt: skip


def _clients(hosts: list[str]) -> list[client.PymongoAdmin]:
    return [client.connect(h, username=None, password=None) for h in hosts]


def _until_ready(step: Callable[[], SetupResult]) -> SetupResult:
    deadline = time.monotonic() + 90
    result = step()
    while not result.ready and time.monotonic() < deadline:
        time.sleep(0.5)
        result = step()
    return result


def test_replica_set_initiates_once_and_reports_ready(mongo_processes: MongoProcesses) -> None:
    start, mongod = mongo_processes.start, mongo_processes.mongod
    hosts = [start(mongod, "--replSet=rs0") for _ in range(3)]
    layout = _rs("rs0", hosts)
    clients = _clients(hosts)
    result = _until_ready(lambda: ensure_replica_set(layout, clients))
    assert result.ready, result
    assert result.primary in hosts
    again = ensure_replica_set(layout, clients)
    assert (again.ready, again.actions) == (True, ())
    status = clients[0].admin_command({"replSetGetStatus": 1})
    assert sorted(m["name"] for m in status["members"]) == sorted(hosts)
    # Localhost exception: no user yet, so the first one can be created.
    primary = client.connect(str(result.primary), username=None, password=None)
    assert ensure_root_user(primary, "root", "contract-pw") is True
    authed = client.connect(str(result.primary), username="root", password="contract-pw")
    assert ensure_root_user(authed, "root", "contract-pw") is False


def test_sharded_cluster_adds_each_shard_once(mongo_processes: MongoProcesses) -> None:
    start, mongod = mongo_processes.start, mongo_processes.mongod
    cfg_hosts = [start(mongod, "--replSet=cfg", "--configsvr")]
    shard_hosts = [[start(mongod, f"--replSet=shard{i}", "--shardsvr")] for i in range(2)]
    cfg = (_rs("cfg", cfg_hosts, configsvr=True), _clients(cfg_hosts))
    # mongos needs a config-server primary to come up, as in the cluster.
    assert _until_ready(lambda: ensure_replica_set(*cfg)).ready
    mongos_host = start(mongo_processes.mongos, f"--configdb=cfg/{cfg_hosts[0]}")
    shards = [(_rs(f"shard{i}", h), _clients(h)) for i, h in enumerate(shard_hosts)]
    router = client.connect(mongos_host, username=None, password=None, direct=False)
    result = _until_ready(lambda: ensure_sharded_cluster(cfg, shards, router))
    assert result.ready, result
    again = ensure_sharded_cluster(cfg, shards, router)
    assert (again.ready, again.actions) == (True, ())
    listed = router.admin_command({"listShards": 1})
    assert sorted(s["_id"] for s in listed["shards"]) == ["shard0", "shard1"]
    first = ensure_sharded_collection(router, "bench", "records")
    again_sharded = ensure_sharded_collection(router, "bench", "records")  # idempotent
    assert (first.actions, again_sharded.actions) == (("shardCollection bench.records",), ())
    assert again_sharded.key == "_id: hashed"
    info: Any = probe(f"mongodb://{mongos_host}/")
    assert (info.engine, info.topology) == ("mongodb", "sharded")


def test_external_probe_of_ferretdb(ferretdb: FerretDBServer) -> None:
    info = probe(ferretdb.uri)
    assert (info.engine, info.topology) == ("mongodb", "standalone")
    assert info.server_version[0].isdigit()
    assert info.endpoint == f"127.0.0.1:{ferretdb.port}"


def test_external_probe_of_a_real_mongod(mongod: StandaloneMongod) -> None:
    info = probe(mongod.uri)
    assert (info.engine, info.topology) == ("mongodb", "standalone")
    assert info.server_version[0].isdigit()
