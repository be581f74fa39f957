"""Per-target hardware: a target's `hardware` replaces the run's fields it sets,
each as a whole; everything that used the run's hardware uses the target's
(pure: the models, the semantic checks, the node fitting, the topology request,
and the report's merge of the summary's wire spec)."""

from __future__ import annotations

from typing import Any

import pytest

from dbbench_contract.api import SpecError, check, parse_spec
from dbbench_operator.naming import RunRef
from dbbench_operator.settings import EngineImage
from dbbench_operator.specs.addresses import topology_request
from dbbench_operator.specs.node_fit import database_demands, misfit, node_pools, pool_name

RUN = RunRef(name="field4", namespace="perf", uid="6a1f0c2e-1111-4c55-9d59-8a1b6f2f4e11")
IMAGES = {e: EngineImage(e, "1") for e in ("mongodb", "mysql", "mariadb", "postgresql")}
RUN_HARDWARE: dict[str, Any] = {
    "nodeSelector": {"pool": "small"},
    "tolerations": [{"key": "bench", "operator": "Exists"}],
    "resources": {"requests": {"cpu": "2", "memory": "8Gi"}, "limits": {"memory": "8Gi"}},
    "storage": {"storageClassName": "fast-ssd", "size": "200Gi"},
    "pricePerHour": 0.192,
}
BIG: dict[str, Any] = {
    "resources": {"limits": {"cpu": "2", "memory": "16Gi"}},
    "nodeSelector": {"pool": "large"},
    "pricePerHour": 0.384,
}


def spec_of(*targets: dict[str, Any], **extra: Any) -> Any:
    return parse_spec({
        "targets": list(targets), "hardware": RUN_HARDWARE,
        "dataset": {"shape": "vehicle", "records": 1000},
        "phases": [{"name": "load", "type": "insert"}], **extra,
    })  # fmt: skip


MONGO = {"name": "mongo", "engine": "mongodb", "topology": "replicaSet"}
PG = {"name": "pg", "engine": "postgresql", "topology": "primaryReplica", "hardware": BIG}


def test_each_field_the_target_sets_replaces_the_runs_whole() -> None:
    spec = spec_of(MONGO, PG)
    mongo, pg = (spec.hardware_of(t) for t in spec.targets)
    assert mongo == spec.hardware  # no hardware of its own: the run's
    assert pg.node_selector == {"pool": "large"}
    assert pg.price_per_hour == 0.384
    # resources replaced as a whole: the run's requests are not kept.
    assert pg.resources is not None
    assert pg.resources.requests is None
    assert pg.resources.limits == {"cpu": "2", "memory": "16Gi"}
    # Unset fields come from the run; exclusivity is always the run's.
    assert pg.tolerations == spec.hardware.tolerations
    assert pg.storage == spec.hardware.storage
    assert pg.exclusive is spec.hardware.exclusive is True


def test_storage_replaces_as_a_block_and_an_empty_selector_clears() -> None:
    own = {"storage": {"size": "50Gi"}, "nodeSelector": {}}
    spec = spec_of({"name": "pg", "engine": "postgresql", "hardware": own})
    hw = spec.hardware_of(spec.targets[0])
    assert str(hw.storage.size) == "50Gi"
    assert hw.storage.storage_class_name is None  # not the run's fast-ssd
    assert hw.node_selector == {}
    assert spec.hardware_path(0, "storage") == "spec.targets[0].hardware.storage"
    assert spec.hardware_path(0, "resources") == "spec.hardware.resources"


def test_settings_are_checked_against_the_targets_own_memory() -> None:
    big_buffers = {**PG, "settings": {"shared_buffers": "10GB"}}
    assert check(spec_of(big_buffers)) == []  # 10GB < the target's 16Gi
    small = {"name": "pg2", "engine": "postgresql", "settings": {"shared_buffers": "10GB"}}
    (problem,) = check(spec_of(big_buffers, small))
    assert problem.field == "spec.targets[1].settings.shared_buffers"
    assert "spec.hardware.resources memory 8Gi" in problem.message
    tight = {**PG, "hardware": {**BIG, "resources": {"limits": {"memory": "4Gi"}}},
             "settings": {"shared_buffers": "10GB"}}  # fmt: skip
    (problem,) = check(spec_of(tight))
    assert "spec.targets[0].hardware.resources memory 4Gi" in problem.message


def test_storage_is_checked_per_target_naming_the_field_in_force() -> None:
    small_disk = {**PG, "hardware": {**BIG, "storage": {"size": "100Mi"}}}
    dataset = {"shape": "vehicle", "records": 100_000}  # about 126 MB
    (problem,) = check(spec_of(MONGO, small_disk, dataset=dataset))
    assert problem.field == "spec.targets[1].hardware.storage.size"
    assert "storage.size is 100Mi" in problem.message
    # Two targets on the run's too-small volume: one problem, on the run's field.
    tiny_run = {**RUN_HARDWARE, "storage": {"size": "10Mi"}}
    problems = check(parse_spec({
        "targets": [MONGO, {"name": "my", "engine": "mysql"}], "hardware": tiny_run,
        "dataset": dataset, "phases": [{"name": "load", "type": "insert"}],
    }))  # fmt: skip
    assert [p.field for p in problems] == ["spec.hardware.storage.size"]


def _node(name: str, cpu: str, memory: str) -> dict[str, Any]:
    amounts = {"cpu": cpu, "memory": memory, "pods": "110"}
    return {"metadata": {"name": name}, "status": {"allocatable": amounts}}


def test_each_target_is_fitted_to_its_own_pool_naming_its_fields() -> None:
    spec = spec_of(MONGO, PG, {"name": "my", "engine": "mysql", "hardware": BIG})
    demands = database_demands(spec)
    # The run's hardware, then each target with its own (each named by its path).
    assert [(d.pool, d.pool_field) for d in demands] == [
        ({"pool": "small"}, "spec.hardware.nodeSelector"),
        ({"pool": "large"}, "spec.targets[1].hardware.nodeSelector"),
        ({"pool": "large"}, "spec.targets[2].hardware.nodeSelector"),
    ]
    large = demands[1]
    nodes = [_node("l1", "4", "8Gi")]
    found = misfit(large, nodes, pool_name(large.pool, large.pool_field))
    assert found is not None
    assert found[1].startswith("spec.targets[1].hardware.resources.limits.memory: 16Gi per "
                               "database pod fits no node of the pool "
                               "spec.targets[1].hardware.nodeSelector={pool=large}")  # fmt: skip
    assert misfit(demands[0], [_node("s1", "4", "8Gi")], "the cluster") is None
    assert node_pools(spec) == [{"pool": "small"}, {"pool": "large"}]


def test_the_topology_request_carries_the_targets_hardware() -> None:
    spec = spec_of(MONGO, PG)
    mongo, pg = (topology_request(RUN, spec, t, "cluster.local", IMAGES) for t in spec.targets)
    assert mongo.hardware.node_selector == {"pool": "small"}
    assert mongo.hardware.resources["limits"] == {"memory": "8Gi"}
    assert pg.hardware.node_selector == {"pool": "large"}
    assert pg.hardware.resources == {"limits": {"cpu": "2", "memory": "16Gi"}}
    assert pg.hardware.storage.size == "200Gi"  # the run's
    assert pg.hardware.tolerations == ({"key": "bench", "operator": "Exists"},)


@pytest.mark.parametrize(
    ("own", "rule"),
    [({"resources": {"limits": {"cpu": "1"}}}, "external target"),
     ({"mongosResources": {"limits": {"cpu": "1"}}}, "mongosResources")],
)  # fmt: skip
def test_refusals_name_the_target_hardware(own: dict[str, Any], rule: str) -> None:
    external = {"uriSecretRef": {"name": "s", "key": "uri"}}
    target = {"name": "x", "engine": "mysql", "hardware": own}
    if rule == "external target":
        target["external"] = external
    with pytest.raises(SpecError) as refused:
        spec_of(target)
    (problem,) = refused.value.problems
    assert problem.field == "spec.targets[0].hardware"
    assert rule in problem.message
    # A price alone is fine on an external target (a managed database's price).
    spec_of({"name": "x", "engine": "mysql", "external": external,
             "hardware": {"pricePerHour": 1.5}})  # fmt: skip
