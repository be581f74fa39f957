"""The report's environment of a sharded target describes the servers that hold the
data: settings, cache, memory and both ratios come from the shards (one line for
shards that agree, one per shard where they differ), and the config servers and
the router are listed as such, with their own limits. The result set is a real
one (tests/fixtures/result_sets.py) whose first target's environment files are
rewritten as a sharded target's runner writes them (tests/unit/runner/drivers/test_mongodb_shards.py
shows the runner gathering them)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from dbbench_contract.environment import MergedEnvironment
from dbbench_report import write_report
from tests.fixtures.result_sets import ResultSets
from tests.support.pages import Page, parse

pytestmark = pytest.mark.integration

GIB = 1 << 30


def shard(name: str, cache: int, used: int, memory: int, **settings: str) -> dict[str, Any]:
    return {"name": name, "hosts": f"{name}/{name}-0:27017", "version": "8.0.4",
            "settings": {"storageEngine": "wiredTiger", **settings}, "cacheBytes": cache,
            "memoryLimitBytes": memory, "cpuLimit": 2.0, "usedBytes": used,
            "dataToCacheRatio": used / cache, "dataToMemoryRatio": used / memory}  # fmt: skip


def pod(name: str, role: str, memory: int, cpu: float) -> dict[str, Any]:
    return {"name": name, "node": "node-a", "role": role, "memoryLimitBytes": memory,
            "cpuLimit": cpu}  # fmt: skip


SHARDS = [
    shard("shard0", GIB, GIB // 2, 4 * GIB, syncPeriodSecs="60"),
    shard("shard1", 2 * GIB, GIB, 4 * GIB, syncPeriodSecs="30"),
]
SERVER = {
    "version": "8.0.4",
    "settings": {"storageEngine": "wiredTiger"},  # what both shards share
    "cacheBytes": 3 * GIB,
    "shards": SHARDS,
    "router": {"cmdLine": "{'sharding': {'configDB': 'cfg/x-cfg-0:27017'}}", "storageEngine": ""},
}
DATABASE = {
    "pods": [pod("x-cfg-0", "configsvr", GIB, 0.5), pod("x-mongos-5f-q", "mongos", 2 * GIB, 1.0),
             pod("x-shard0-0", "shard0", 4 * GIB, 2.0), pod("x-shard1-0", "shard1", 4 * GIB, 2.0)],
    "memoryLimitBytes": 4 * GIB,
    "cpuLimit": 2.0,
}  # fmt: skip


def as_sharded(result_sets: ResultSets, tmp_path: Path) -> tuple[Page, list[str]]:
    copy = tmp_path / "run"
    shutil.copytree(result_sets.baseline.path, copy)
    run = json.loads((copy / "summary.json").read_text())
    targets = [{k: v for k, v in t.items() if k != "external"} for t in run["spec"]["targets"]]
    name = targets[0]["name"]
    targets[0] = {**targets[0], "engine": "mongodb", "topology": "sharded", "shards": 2}
    run["spec"]["targets"] = targets
    (copy / "summary.json").write_text(json.dumps(run))
    files = sorted(copy.glob(f"{name}/*/*/environment.json"))
    assert files, "the result set has no environment of the first target"
    for path in files:
        merged = json.loads(path.read_text())
        for environment in merged["pods"]:
            environment["server"] = SERVER
            environment["database"] = DATABASE
            environment["dataToCacheRatio"] = 1.5 * GIB / (3 * GIB)
            environment["dataToMemoryRatio"] = 1.5 * GIB / (8 * GIB)
        MergedEnvironment.from_wire(merged)  # what the runner writes, by the contract
        path.write_text(json.dumps(merged))
    return parse(write_report(copy).read_text()), [t["name"] for t in targets]


def cell(page: Page, target: str, field: str) -> str:
    return page.find("environment", target, field=field).text


def test_the_shards_hold_the_data_the_environment_describes(
    result_sets: ResultSets, tmp_path: Path
) -> None:
    page, (target, _) = as_sharded(result_sets, tmp_path)
    settings = cell(page, target, "settings in force")
    assert settings.startswith("every shard: storageEngine = wiredTiger")
    assert "shard0: syncPeriodSecs = 60" in settings
    assert "shard1: syncPeriodSecs = 30" in settings
    assert "configDB" not in settings  # the router's are not the shards'
    # Caches differ: one line per shard; memory agrees: one line for both.
    assert cell(page, target, "engine cache (MiB)") == "3,072 in allshard0: 1,024shard1: 2,048"
    assert cell(page, target, "database memory limit (MiB)") == "shard0, shard1: 4,096"
    assert cell(page, target, "data-to-cache ratio") == "0.500 in allshard0, shard1: 0.500"
    assert cell(page, target, "data-to-memory ratio") == (
        "0.188 in allshard0: 0.125shard1: 0.250"
    )  # fmt: skip
    servers = cell(page, target, "config servers and routers")
    assert "config server: x-cfg-0 (1,024 MiB, 0.5 CPU)" in servers
    assert "router (mongos): x-mongos-5f-q (2,048 MiB, 1 CPU)" in servers
    assert "configDB" in servers


def test_other_targets_keep_one_server(result_sets: ResultSets, tmp_path: Path) -> None:
    page, (_, other) = as_sharded(result_sets, tmp_path)
    assert cell(page, other, "config servers and routers") == "—"
    settings = cell(page, other, "settings in force")
    assert "every shard" not in settings
    assert "innodb_flush_log_at_trx_commit = " in settings
