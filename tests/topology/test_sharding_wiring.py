"""Sharded targets (issue 8, defect 1): the collection the operator shards is the
one the runner writes, and the shard key reaches the status, the step file and
the results' environment."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from dbbench_contract.environment import NoopLoop
from dbbench_operator.addressing import target_access, topology_request
from dbbench_operator.model import BENCHMARK_DATABASE, DATASET_COLLECTIONS, parse_spec
from dbbench_operator.naming import RunRef
from dbbench_operator.observations import TargetSeen
from dbbench_operator.planning import plan
from dbbench_operator.runner_jobs import build_step_config
from dbbench_runner.config import Dataset as RunnerDataset
from dbbench_runner.config import Target as RunnerTarget
from dbbench_runner.config import parse_config
from dbbench_runner.datasets import generator_for
from dbbench_runner.drivers.base import ServerInfo
from dbbench_runner.environment import environment

REPO = Path(__file__).resolve().parents[2]
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
    assert (request.database, request.collection, request.shard_key) == (
        "dbbench", "indexed4", "_id"
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
