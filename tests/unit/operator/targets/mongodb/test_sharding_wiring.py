"""Sharded targets (issue 8, defect 1; issue 29): the collections the operator
shards are the ones the runner writes (every key mode the phases use), and the
shard key reaches the status, the step file and the results' environment."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from dbbench_contract.api import BENCHMARK_DATABASE, DATASET_COLLECTIONS, parse_spec
from dbbench_contract.environment import NoopLoop
from dbbench_operator.naming import RunRef
from dbbench_operator.specs.addresses import target_access, topology_request
from dbbench_operator.specs.databases import target_names
from dbbench_operator.specs.plan import plan
from dbbench_operator.specs.runner_job import build_step_config
from dbbench_operator.status.observations import TargetSeen
from dbbench_operator.targets.mongodb.target import set_up_mongodb
from dbbench_runner.config import Dataset as RunnerDataset
from dbbench_runner.config import Target as RunnerTarget
from dbbench_runner.config import parse_config
from dbbench_runner.datasets import generator_for
from dbbench_runner.drivers.base import ServerInfo
from dbbench_runner.environment import environment
from tests.unit.operator.targets.mongodb.test_mongo_setup import Recorder, _catalog, _status
from tests.unit.operator.targets.mongodb.test_mongo_target import CREDS, Servers

REPO = Path(__file__).resolve().parents[5]
RUN = RunRef(name="cmp", namespace="perf", uid="uid-1")


def _spec(**target: Any) -> Any:
    raw = yaml.safe_load((REPO / "examples" / "indexed4-single-vs-sharded.yaml").read_text())
    raw["spec"]["targets"][1].update(target)
    return parse_spec(raw["spec"])


def test_operator_shards_the_collection_the_runner_writes() -> None:
    for shape, collection in DATASET_COLLECTIONS.items():
        assert generator_for(RunnerDataset(shape=shape, records=10)).table == collection
    assert RunnerTarget(name="t", engine="mongodb", uri="mongodb://x/").database == (
        BENCHMARK_DATABASE
    )


def test_sharded_request_names_collection_and_key() -> None:
    spec = _spec()
    request = topology_request(RUN, spec, spec.targets[1])
    assert (request.database, request.collections, request.shard_key) == (
        "dbbench", ("indexed4",), "_id"
    )  # fmt: skip
    custom = _spec(shardKey="Number")
    assert topology_request(RUN, custom, custom.targets[1]).shard_key == "Number"


def test_shard_key_reaches_status_step_file_and_environment() -> None:
    spec = _spec(shardKey="Number")
    seen = TargetSeen("sharded", True, "Ready", "", "mongos:27017", shard_key="Number: hashed")
    assert seen.status()["shardKey"] == "Number: hashed"
    step = next(s for s in plan(spec) if s.target == "sharded")
    config = build_step_config(spec, step, target_access(RUN, spec, 1))
    assert config.target.shard_key == "Number: hashed"
    raw = config.to_wire()
    parsed = parse_config({**raw, "pod": {**raw["pod"], "index": 0}})
    info = ServerInfo(engine="mongodb", version="8.0")
    assert (
        environment(parsed, info, None, 1, cpu_budget=1.0, noop_loop=NoopLoop()).target.shard_key
        == "Number: hashed"
    )
    single = next(s for s in plan(spec) if s.target == "single")
    assert build_step_config(spec, single, target_access(RUN, spec, 0)).target.shard_key is None


def _shard_commands(spec: Any, index: int) -> list[dict[str, Any]]:
    """The shardCollection commands one setup pass of targets[index] sends through mongos."""
    request = topology_request(RUN, spec, spec.targets[index])
    layout = target_names.layout(request)
    servers = Servers()
    for rs in layout.replica_sets:
        servers.by_host[rs.host(0)] = Recorder(replSetGetStatus=_status(["PRIMARY"], 0, rs))
    mongos = servers.by_host[layout.endpoint] = Recorder(
        listShards={"ok": 1, "shards": [{"_id": s.name} for s in layout.shards]},
        usersInfo={"ok": 1, "users": [{"user": "root"}]},
        getDefaultRWConcern={"ok": 1, "defaultWriteConcern": {"w": 1, "j": True}},
        find=_catalog(),
    )
    assert set_up_mongodb(request, CREDS, connect=servers).ready
    return [doc for doc in mongos.sent if "shardCollection" in doc]


def test_every_collection_the_phases_use_is_sharded_on_the_target_key() -> None:
    raw = yaml.safe_load((REPO / "examples" / "indexed4-single-vs-sharded.yaml").read_text())
    raw["spec"]["targets"][1]["shardKey"] = "Number"
    phases = raw["spec"]["phases"]
    phases[1]["idMode"] = "server"  # insert-batch into the server-keyed collection
    phases.append({**phases[-1], "name": "queries-server", "idMode": "server"})
    spec = parse_spec(raw["spec"])
    assert _shard_commands(spec, 1) == [
        {"shardCollection": "dbbench.indexed4", "key": {"Number": "hashed"}},
        {"shardCollection": "dbbench.indexed4_serverkey", "key": {"Number": "hashed"}},
    ]


def test_field2_shards_the_server_keyed_collection_its_phases_write_and_read() -> None:
    for name in ("2-single-vs-sharded.yaml", "2-single-vs-sharded-small.yaml"):
        raw = yaml.safe_load((REPO / "examples" / "field" / name).read_text())
        spec = parse_spec(raw["spec"])
        sharded = next(i for i, t in enumerate(spec.targets) if t.topology == "sharded")
        assert _shard_commands(spec, sharded) == [
            {"shardCollection": "dbbench.indexed4_serverkey", "key": {"_id": "hashed"}},
        ], name
