"""Contract suite: the MongoDB setup against real mongod/mongos processes.

Runs when `mongod` and `mongos` are on PATH (they cannot be installed on the
development machine, so there it is skipped and reported as such); every
process is started on a free loopback port and stopped by PID.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from dbbench_operator.topology import mongo_client
from dbbench_operator.topology.external import probe
from dbbench_operator.topology.mongo_setup import (
    SetupResult,
    ensure_replica_set,
    ensure_root_user,
    ensure_sharded_cluster,
)
from dbbench_operator.topology.mongo_sharding import ensure_sharded_collection
from dbbench_operator.topology.naming import MONGO_PORT, ReplicaSetLayout
from tests.fixtures.mariadb import free_port

pytestmark = pytest.mark.mongodb

MONGOD, MONGOS = shutil.which("mongod"), shutil.which("mongos")
needs_binaries = pytest.mark.skipif(
    MONGOD is None or MONGOS is None,
    reason="mongod/mongos not on PATH: MongoDB contract suite not run (install MongoDB to run it)",
)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Callable[..., str]]:
    """Start mongod/mongos with the given arguments on a free port; returns host:port."""
    processes: list[subprocess.Popen[bytes]] = []

    def run(binary: str | None, *args: str) -> str:
        assert binary is not None
        port = free_port()
        extra: list[str] = []
        if binary == MONGOD:
            dbpath = tmp_path / f"db-{port}"
            dbpath.mkdir()
            extra = [f"--dbpath={dbpath}"]
        log = tmp_path / f"{port}.log"
        argv = [binary, "--bind_ip=127.0.0.1", f"--port={port}", f"--logpath={log}", *extra, *args]
        processes.append(
            subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        )
        host = f"127.0.0.1:{port}"
        client = mongo_client.connect(host, username=None, password=None, timeout_ms=1000)
        deadline = time.monotonic() + 60
        while True:
            try:
                client.admin_command({"ping": 1})
                break
            except Exception:
                if time.monotonic() > deadline or processes[-1].poll() is not None:
                    raise
                time.sleep(0.3)
        client.close()
        return host

    yield run
    for process in reversed(processes):
        _stop(process)


def _rs(name: str, hosts: list[str], configsvr: bool = False) -> ReplicaSetLayout:
    return ReplicaSetLayout(
        name, name, name, len(hosts), MONGO_PORT, "local", configsvr=configsvr,
        explicit_hosts=tuple(hosts),
    )  # fmt: skip


def _clients(hosts: list[str]) -> list[mongo_client.PymongoAdmin]:
    return [mongo_client.connect(h, username=None, password=None) for h in hosts]


def _until_ready(step: Callable[[], SetupResult]) -> SetupResult:
    deadline = time.monotonic() + 90
    result = step()
    while not result.ready and time.monotonic() < deadline:
        time.sleep(0.5)
        result = step()
    return result


@needs_binaries
def test_replica_set_initiates_once_and_reports_ready(start: Callable[..., str]) -> None:
    hosts = [start(MONGOD, "--replSet=rs0") for _ in range(3)]
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
    primary = mongo_client.connect(str(result.primary), username=None, password=None)
    assert ensure_root_user(primary, "root", "contract-pw") is True
    authed = mongo_client.connect(str(result.primary), username="root", password="contract-pw")
    assert ensure_root_user(authed, "root", "contract-pw") is False


@needs_binaries
def test_sharded_cluster_adds_each_shard_once(start: Callable[..., str]) -> None:
    cfg_hosts = [start(MONGOD, "--replSet=cfg", "--configsvr")]
    shard_hosts = [[start(MONGOD, f"--replSet=shard{i}", "--shardsvr")] for i in range(2)]
    cfg = (_rs("cfg", cfg_hosts, configsvr=True), _clients(cfg_hosts))
    # mongos needs a config-server primary to come up, as in the cluster.
    assert _until_ready(lambda: ensure_replica_set(*cfg)).ready
    mongos_host = start(MONGOS, f"--configdb=cfg/{cfg_hosts[0]}")
    shards = [(_rs(f"shard{i}", h), _clients(h)) for i, h in enumerate(shard_hosts)]
    router = mongo_client.connect(mongos_host, username=None, password=None, direct=False)
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


def test_external_probe_against_mongodb_uri() -> None:
    uri = os.environ.get("MONGODB_URI")
    if not uri:
        pytest.skip("MONGODB_URI is not set: MongoDB contract probe not run")
    info = probe(uri)
    assert info.engine == "mongodb"
    assert info.topology in ("standalone", "replicaSet", "sharded")
    assert info.server_version[0].isdigit()
