"""Memory limits below what a server needs at the run's settings are refused at
admission (model/memory_floors.py), and the floor agrees with the MySQL image's
entrypoint and with the caches the operator computes from a limit."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import pytest

from dbbench_contract.api import check, parse_spec
from dbbench_contract.api import memory_floors as floors
from dbbench_contract.api.units import parse_postgres_size
from dbbench_operator.specs.databases import sizing
from dbbench_operator.specs.databases.postgres_sizing import postgres_settings
from tests.support.manifests import EXAMPLES, REPO, load

MIB = floors.MIB
FIELD_EXAMPLES = sorted((REPO / "examples" / "field").glob("*.yaml"))


def run(memory: str, **target: Any) -> dict[str, Any]:
    return {
        "targets": [{"name": "db", **target}],
        "hardware": {"resources": {"requests": {"cpu": "250m", "memory": memory},
                                   "limits": {"cpu": "1", "memory": memory}},
                     "storage": {"size": "1Gi"}},
        "dataset": {"shape": "flat45", "records": 1000},
        "phases": [{"name": "load", "type": "insert"}],
    }  # fmt: skip


def floor_problems(spec: dict[str, Any]) -> list[str]:
    return [f"{p.field}: {p.message}" for p in check(parse_spec(spec))
            if p.field.endswith(".memory")]  # fmt: skip


def test_the_512mi_mysql_primary_replica_run_is_refused_naming_the_field_figure_and_fix() -> None:
    (problem,) = floor_problems(run("512Mi", engine="mysql", topology="primaryReplica",
                                    members=2))  # fmt: skip
    assert problem.startswith(
        "spec.hardware.resources.limits.memory: 512Mi is below what MySQL needs at target "
        "db's settings: about 627 MiB (MySQL 9.7 (8.4 taken as the same): the server 232 MiB, "
        "performance_schema 248 MiB, a 32 MiB buffer pool and its bookkeeping, 151 "
        "connections x 0.75 MiB)"
    ), problem
    assert problem.endswith(
        'set limits.memory to at least 768Mi, or settings.performance_schema: "OFF" '
        "(then about 379 MiB)"
    ), problem


def test_what_the_message_suggests_is_admitted() -> None:
    assert floor_problems(run("768Mi", engine="mysql", topology="primaryReplica", members=2)) == []
    assert floor_problems(run("512Mi", engine="mysql", settings={
        "performance_schema": "OFF"})) == []  # fmt: skip


def test_a_targets_own_limit_and_settings_are_named() -> None:
    spec = run("8Gi", engine="mariadb")
    spec["targets"].append({"name": "small", "engine": "mysql", "settings": {
        "max_connections": "1000", "performance_schema": "OFF"},
        "hardware": {"resources": {"requests": {"memory": "640Mi"}}}})  # fmt: skip
    (problem,) = floor_problems(spec)
    assert problem.startswith("spec.targets[1].hardware.resources.requests.memory: 640Mi is ")
    assert "1000 connections x 0.75 MiB" in problem
    assert 'settings.max_connections: "' in problem  # fewer connections would fit


@pytest.mark.parametrize(
    ("engine", "extra", "memory"),
    [("mariadb", {}, "512Mi"), ("postgresql", {}, "512Mi"),
     ("mongodb", {"protocolStandIn": True, "image": "localhost/x:1"}, "256Mi"),
     ("mongodb", {}, "512Mi")],
)  # fmt: skip
def test_the_small_limits_the_node_runs_are_admitted(
    engine: str, extra: dict[str, Any], memory: str
) -> None:
    """The quickstart's and the e2e targets' 512Mi (MariaDB, PostgreSQL, the stand-in)."""
    assert floor_problems(run(memory, engine=engine, **extra)) == []


@pytest.mark.parametrize(("engine", "memory"), [("mariadb", "128Mi"), ("postgresql", "192Mi"),
                                                ("mongodb", "384Mi")])  # fmt: skip
def test_every_engine_has_a_floor(engine: str, memory: str) -> None:
    (problem,) = floor_problems(run(memory, engine=engine))
    assert f"is below what {floors.FOOTPRINTS[engine].name} needs" in problem


def test_every_example_passes() -> None:
    examples = [p for p in [*EXAMPLES, *FIELD_EXAMPLES] if load(p).get("kind") == "BenchmarkRun"]
    assert len(examples) >= 20
    for path in examples:
        assert floor_problems(load(path)["spec"]) == [], path.name


def test_the_mysql_entrypoint_states_the_floor_at_mysqls_defaults() -> None:
    """One figure: what the image's entrypoint tells a refused user is what the
    admission floor suggests for MySQL at its defaults (a 128 MiB pool,
    performance_schema ON, 151 connections)."""
    text = (REPO / "hack/cluster/mysql/docker-entrypoint.sh").read_text()
    (said,) = re.findall(r"MySQL 9\.7 at its defaults wants (\w+)", text)
    fp = floors.FOOTPRINTS["mysql"]
    needed = floors.floor(fp, 128 * MIB, fp.default_connections, performance_schema=True)
    assert said == floors.suggested_limit(needed)


@pytest.mark.parametrize("engine", ["mysql", "mariadb"])
def test_a_limit_the_floor_admits_holds_the_pool_the_operator_computes(engine: str) -> None:
    """Admission checks the smallest pool; the operator's computed pool leaves the
    floor's overhead free at any limit and max_connections."""
    fp = floors.FOOTPRINTS[engine]
    checked = 0
    for connections in (10, 50, 151, 500, 2000):
        for ps in (True, False):
            overhead = floors.overhead(fp, connections, ps)
            for limit in range(256 * MIB, 65 * 1024 * MIB, 64 * MIB):
                if floors.floor(fp, floors.INNODB_MIN_POOL, connections, ps) > limit:
                    continue
                pool, _ = sizing.innodb_buffer_pool(limit, connections, floor_overhead=overhead)
                assert floors.floor(fp, pool, connections, ps) <= limit, (connections, ps, limit)
                checked += 1
    assert checked > 1000


def test_a_limit_the_floor_admits_holds_the_shared_buffers_the_operator_computes() -> None:
    fp = floors.FOOTPRINTS["postgresql"]
    checked = 0
    for limit in range(128 * MIB, 65 * 1024 * MIB, 64 * MIB):
        shared = max(floors.MIN_SHARED_BUFFERS, int(limit * floors.SHARED_BUFFERS_SHARE))
        computed = parse_postgres_size(postgres_settings(limit, "safe")["shared_buffers"], 8192)
        assert computed <= shared  # what admission assumed, or less (rounded down)
        if floors.floor(fp, shared, fp.default_connections, False) <= limit:
            checked += 1
    assert checked > 1000


def test_the_wired_tiger_cache_the_operator_computes_is_never_below_the_floors() -> None:
    for limit in (256 * MIB, 512 * MIB, floors.GIB, 3 * floors.GIB):
        cache = Decimal(sizing.wired_tiger_cache_gb(limit)) * floors.GIB
        assert cache >= floors.MIN_WIRED_TIGER_CACHE
        fp = floors.FOOTPRINTS["mongodb"]
        if floors.floor(fp, floors.MIN_WIRED_TIGER_CACHE, 10, False) <= limit:
            assert floors.floor(fp, int(cache), 10, False) <= limit, limit


def test_external_targets_are_not_checked() -> None:
    spec = run("128Mi", engine="mysql")
    spec["targets"][0]["external"] = {"uriSecretRef": {"name": "s", "key": "uri"}}
    assert floor_problems(spec) == []


def test_a_sharded_targets_config_servers_have_a_floor_of_their_own() -> None:
    spec = run("2Gi", engine="mongodb", topology="sharded", shards=2)
    assert floor_problems(spec) == []  # their default 1Gi holds them
    spec["hardware"]["configServerResources"] = {"limits": {"cpu": "500m", "memory": "256Mi"}}
    (problem,) = floor_problems(spec)
    assert problem.startswith("spec.hardware.configServerResources.limits.memory: 256Mi is "
                              "below what a config server")  # fmt: skip
    assert "set limits.memory to at least 512Mi" in problem
