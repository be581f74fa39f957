"""A sharded target's environment comes from its shards' own mongod, on exact commands.

No real mongod/mongos runs here (FerretDB has no sharding): a recording fake
pymongo client per address stands in at the driver's client factory, scripted
as mongos and two shards answer. Checked: the runner asks the router for its
shards, connects to each shard's replica set with the target's credentials and
the router's options, reads buildInfo / getCmdLineOpts / serverStatus there,
and environment.json takes memory, CPU, cache, settings and both ratios from
the shards (one entry per shard), never from a config server or the router.
The non-sharded path runs for real against FerretDB in test_contract_mongodb.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest
from pymongo.errors import OperationFailure, ServerSelectionTimeoutError

from dbbench_contract.environment import NoopLoop
from dbbench_runner import environment as env
from dbbench_runner.config import StepConfig, parse_config
from dbbench_runner.datasets import generator_for
from dbbench_runner.drivers.mongodb import MongoDriver
from dbbench_runner.drivers.mongodb_shards import shard_uri

GIB = 1 << 30
ROUTER_URI = "mongodb://bench-mongo-1a2b3c-mongos.perf.svc.cluster.local:27017/?authSource=admin"
CONFIG_DB = "cfg/bench-mongo-1a2b3c-cfg-0.bench-mongo-1a2b3c-cfg.perf.svc.cluster.local:27017"
SHARD0 = "shard0/s0-0.s0.perf.svc:27017,s0-1.s0.perf.svc:27017"
SHARD1 = "shard1/s1-0.s1.perf.svc:27017"


def mongod_replies(cache_gb: float, compressor: str) -> dict[str, Any]:
    parsed = {"storage": {"wiredTiger": {"engineConfig": {"cacheSizeGB": cache_gb},
                                         "collectionConfig": {"blockCompressor": compressor}}},
              "sharding": {"clusterRole": "shardsvr"}}  # fmt: skip
    return {
        "hello": {"isWritablePrimary": True, "setName": "shard"},
        "buildInfo": {"version": "8.0.4"},
        "getCmdLineOpts": {"parsed": parsed},
        "serverStatus": {"storageEngine": {"name": "wiredTiger"},
                         "wiredTiger": {"cache": {"maximum bytes configured": cache_gb * GIB}}},
    }  # fmt: skip


ROUTER = {
    "ping": {"ok": 1},
    "hello": {"isWritablePrimary": True, "msg": "isdbgrid"},
    "buildInfo": {"version": "8.0.4"},
    "getCmdLineOpts": {"parsed": {"sharding": {"configDB": CONFIG_DB}}},
    # A router's serverStatus: no storage engine, no WiredTiger cache.
    "serverStatus": {"process": "mongos"},
    "listShards": {"shards": [{"_id": "shard0", "host": SHARD0, "state": 1},
                              {"_id": "shard1", "host": SHARD1, "state": 1}]},
    "collStats": {"size": 3 * GIB, "totalIndexSize": GIB, "storageSize": 2 * GIB, "count": 9,
                  "shards": {"shard0": {"size": GIB, "totalIndexSize": GIB // 2},
                             "shard1": {"size": 2 * GIB, "totalIndexSize": GIB // 2}}},
    # Each shard's part (drivers/mongodb_distribution.py: $collStats, config.chunks).
    "bench.aggregate": {"cursor": {"firstBatch": [
        {"shard": "shard0", "count": 4, "size": GIB, "storageSize": GIB // 2,
         "totalIndexSize": GIB // 2},
        {"shard": "shard1", "count": 5, "size": 2 * GIB, "storageSize": GIB,
         "totalIndexSize": GIB // 2}]}},
    "config.find": {"cursor": {"firstBatch": [{"_id": "bench.flat45", "uuid": "u-1"}]}},
    "config.aggregate": {"cursor": {"firstBatch": [{"_id": "shard0", "chunks": 2},
                                                   {"_id": "shard1", "chunks": 2}]}},
}  # fmt: skip


class Server:
    """One address's fake client: answers `command(name)` from a script, records it."""

    scripts: ClassVar[dict[str, dict[str, Any] | Exception]] = {}
    opened: ClassVar[list[Server]] = []

    def __init__(self, uri: str, **kwargs: Any) -> None:
        self.uri, self.kwargs = uri, kwargs
        self.sent: list[str] = []
        self.closed = False
        self.admin = self
        Server.opened.append(self)

    def __getitem__(self, name: str) -> Any:
        return _Database(self, name) if name in ("bench", "config") else _Collection()

    def command(self, name: str, *args: Any) -> dict[str, Any]:
        self.sent.append(name)
        script = next(s for prefix, s in self.scripts.items() if self.uri.startswith(prefix))
        if isinstance(script, Exception):
            raise script
        if name not in script:
            raise OperationFailure(f"no such command: {name}", code=59)
        return dict(script[name])

    def close(self) -> None:
        self.closed = True


class _Collection:
    def with_options(self, **_: Any) -> _Collection:
        return self


class _Database:
    """A database of a fake client: a command document is scripted as
    "<database>.<command name>" (a command given by name, by its name)."""

    def __init__(self, server: Server, name: str) -> None:
        self.server, self.name = server, name

    def __getitem__(self, name: str) -> _Collection:
        return _Collection()

    def command(self, command: str | dict[str, Any], *args: Any) -> dict[str, Any]:
        if isinstance(command, str):
            return self.server.command(command, *args)
        return self.server.command(f"{self.name}.{next(iter(command))}")


@pytest.fixture(autouse=True)
def cluster() -> None:
    Server.opened = []
    Server.scripts = {
        "mongodb://bench-mongo": dict(ROUTER),
        "mongodb://s0-0": mongod_replies(1.5, "snappy"),
        "mongodb://s1-0": mongod_replies(2.0, "snappy"),
    }


def pod(name: str, role: str, memory: int, cpu: float) -> dict[str, Any]:
    return {"name": name, "node": "node-a", "role": role, "memoryLimitBytes": memory,
            "cpuLimit": cpu}  # fmt: skip


# Config servers and the router sort before the shards by name: the first pod used
# to stand for the target's memory.
PODS = [
    pod("bench-mongo-1a2b3c-cfg-0", "configsvr", GIB, 0.5),
    pod("bench-mongo-1a2b3c-mongos-7d9f-x2", "mongos", GIB, 1.0),
    pod("bench-mongo-1a2b3c-shard0-0", "shard0", 4 * GIB, 2.0),
    pod("bench-mongo-1a2b3c-shard0-1", "shard0", 4 * GIB, 2.0),
    pod("bench-mongo-1a2b3c-shard1-0", "shard1", 8 * GIB, 4.0),
]


def sharded_step(tmp_path: Path, pods: list[dict[str, Any]] = PODS) -> StepConfig:
    secret = tmp_path / "password"
    secret.write_text("s3cret\n")
    return parse_config({
        "target": {"name": "mongo", "engine": "mongodb", "uri": ROUTER_URI, "user": "root",
                   "passwordFile": str(secret), "database": "bench", "shardKey": "_id: hashed",
                   "connectRetries": 1},
        "dataset": {"shape": "flat45", "records": 100},
        "phase": {"name": "reads", "type": "pointReads", "keys": 100, "operations": 100},
        "databaseHost": {"pods": pods},
    })  # fmt: skip


def connect(config: StepConfig) -> MongoDriver:
    return MongoDriver.connect(config, generator_for(config.dataset), client_factory=Server)


def gathered(config: StepConfig) -> Any:
    driver = connect(config)
    info, storage = driver.server_info(), driver.storage()
    noop = NoopLoop()
    return env.environment(config, info, storage, 1, cpu_budget=1.0, noop_loop=noop)


def test_each_shard_is_read_on_its_own_replica_set_with_the_targets_login(
    tmp_path: Path,
) -> None:
    driver = connect(sharded_step(tmp_path))
    info = driver.server_info()
    router, *shards = Server.opened
    assert router.sent == ["ping", "buildInfo", "hello", "getCmdLineOpts", "serverStatus",
                           "listShards"]  # fmt: skip
    assert [s.uri for s in shards] == [
        "mongodb://s0-0.s0.perf.svc:27017,s0-1.s0.perf.svc:27017/?authSource=admin"
        "&replicaSet=shard0",
        "mongodb://s1-0.s1.perf.svc:27017/?authSource=admin&replicaSet=shard1",
    ]
    for shard in shards:
        assert shard.kwargs == {**router.kwargs}  # the same login, timeouts, one connection
        assert shard.kwargs["username"] == "root"
        assert shard.kwargs["password"] == "s3cret"
        assert shard.sent == ["buildInfo", "getCmdLineOpts", "serverStatus"]
        assert shard.closed
    assert [(s.name, s.hosts, s.cache_bytes, s.error) for s in info.shards] == [
        ("shard0", SHARD0, int(1.5 * GIB), None),
        ("shard1", SHARD1, 2 * GIB, None),
    ]
    assert info.shards[0].settings["storageEngine"] == "wiredTiger"
    assert "'cacheSizeGB': 1.5" in info.shards[0].settings["cmdLine"]
    # Settings the shards share, their caches together; the router's own apart.
    assert info.settings == {"storageEngine": "wiredTiger"}
    assert info.cache_bytes == int(3.5 * GIB)
    assert CONFIG_DB in info.router["cmdLine"]
    assert info.router["storageEngine"] == ""


def test_the_environment_holds_the_shards_memory_cpu_and_ratios(tmp_path: Path) -> None:
    environment = gathered(sharded_step(tmp_path))
    server = environment.server
    assert [(s.name, s.memory_limit_bytes, s.cpu_limit) for s in server.shards] == [
        ("shard0", 4 * GIB, 2.0), ("shard1", 8 * GIB, 4.0)
    ]  # fmt: skip
    # Each shard's part of the data over its own cache and memory.
    shard0, shard1 = server.shards
    assert (shard0.used_bytes, shard1.used_bytes) == (int(1.5 * GIB), int(2.5 * GIB))
    assert shard0.data_to_cache_ratio == pytest.approx(1.0)
    assert shard0.data_to_memory_ratio == pytest.approx(1.5 / 4)
    assert shard1.data_to_cache_ratio == pytest.approx(2.5 / 2)
    assert shard1.data_to_memory_ratio == pytest.approx(2.5 / 8)
    # The target's: the whole collection over the shards' caches / memory together.
    assert environment.data_to_cache_ratio == pytest.approx(4 / 3.5)
    assert environment.data_to_memory_ratio == pytest.approx(4 / 12)
    # The shards differ in memory: no one limit stands for the target; the config
    # server's and the router's never do.
    host = environment.database
    assert host is not None
    assert host.memory_limit_bytes is None
    assert {p.role for p in host.pods if not p.holds_data} == {"configsvr", "mongos"}


def test_shards_alike_give_the_target_their_limit(tmp_path: Path) -> None:
    alike = [p for p in PODS if p["role"] != "shard1"]
    alike.append(pod("bench-mongo-1a2b3c-shard1-0", "shard1", 4 * GIB, 2.0))
    environment = gathered(sharded_step(tmp_path, alike))
    assert environment.data_to_memory_ratio == pytest.approx(4 / 8)
    assert [s.memory_limit_bytes for s in environment.server.shards] == [4 * GIB, 4 * GIB]


def test_a_shard_that_cannot_be_read_says_so(tmp_path: Path) -> None:
    Server.scripts["mongodb://s1-0"] = ServerSelectionTimeoutError("s1-0: timed out")
    environment = gathered(sharded_step(tmp_path))
    shard0, shard1 = environment.server.shards
    assert shard0.error is None
    assert (shard1.error, shard1.cache_bytes, shard1.settings) == (
        "ServerSelectionTimeoutError", None, {}
    )  # fmt: skip
    assert "s1-0" not in shard1.error  # the error's type only, no host names
    # Nothing is filled in from the other shard.
    assert environment.server.cache_bytes is None
    assert environment.data_to_cache_ratio is None
    assert environment.server.settings == shard0.settings


def test_a_router_that_refuses_listshards_lists_why(tmp_path: Path) -> None:
    del Server.scripts["mongodb://bench-mongo"]["listShards"]  # type: ignore[union-attr]
    info = connect(sharded_step(tmp_path)).server_info()
    (shard,) = info.shards
    assert shard.error == "OperationFailure(59)"
    assert "unavailable" in info.settings


@pytest.mark.parametrize(
    ("router", "hosts", "replica_set", "wanted"),
    [
        (ROUTER_URI, "a:1,b:2", "shard0", "mongodb://a:1,b:2/?authSource=admin&replicaSet=shard0"),
        # An external target: the user, database and options go along; routing ones do not.
        ("mongodb://u:p%40w@router:27017/bench?tls=true&loadBalanced=false&replicaSet=x",
         "a:1", "s0", "mongodb://u:p%40w@a:1/bench?tls=true&replicaSet=s0"),
        ("mongodb+srv://u:p@cluster.example/?authSource=admin", "a:1", "s0",
         "mongodb://u:p@a:1/?authSource=admin&tls=true&replicaSet=s0"),
        ("mongodb://router:27017", "a:1", None, "mongodb://a:1/"),
    ],
)  # fmt: skip
def test_shard_uri(router: str, hosts: str, replica_set: str | None, wanted: str) -> None:
    assert shard_uri(router, hosts, replica_set) == wanted
