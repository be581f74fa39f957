"""Requests that fit no node of their pool are refused at once, naming the field
and the largest node (pure: node objects as the API server returns them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from dbbench_contract.api import parse_spec
from dbbench_operator.specs.node_fit import (
    NO_NODE_FITS,
    database_demands,
    misfit,
    pool_name,
    runner_demand,
)

REPO = Path(__file__).resolve().parents[4]


def node(name: str, cpu: str, memory: str, **extra: str) -> dict[str, Any]:
    allocatable = {"cpu": cpu, "memory": memory, "pods": "110", **extra}
    return {"metadata": {"name": name}, "status": {"capacity": allocatable,
                                                   "allocatable": allocatable}}  # fmt: skip


def spec_with(**overrides: Any) -> Any:
    raw = dict(yaml.safe_load((REPO / "examples" / "quickstart.yaml").read_text())["spec"])
    raw.update(overrides)
    return parse_spec(raw)


NODES = [node("small", "2", "4Gi"), node("big", "8", "31776060Ki")]


def test_a_cpu_request_above_every_node_names_the_field_and_the_largest_node() -> None:
    spec = spec_with(hardware={"resources": {"requests": {"cpu": "64", "memory": "1Gi"}}})
    (demand,) = database_demands(spec)
    found = misfit(demand, NODES, pool_name(None, "spec.hardware.nodeSelector"))
    assert found is not None
    reason, message = found
    assert reason == NO_NODE_FITS
    assert message.startswith("spec.hardware.resources.requests.cpu: 64 per database pod")
    assert "the largest, big, has 8 cpu allocatable" in message
    assert "2 node(s) seen" in message


def test_a_limit_without_a_request_is_the_request_and_is_named_as_the_limit() -> None:
    spec = spec_with(hardware={"resources": {"limits": {"cpu": "1", "memory": "64Gi"}}})
    (demand,) = database_demands(spec)
    found = misfit(demand, NODES, "the cluster")
    assert found is not None
    assert found[1].startswith("spec.hardware.resources.limits.memory: 64Gi per database pod")
    assert "big, has 30.3Gi memory" in found[1]


def test_requests_that_fit_one_node_pass_and_so_does_an_empty_pool() -> None:
    spec = spec_with(hardware={"resources": {"requests": {"cpu": "8", "memory": "30Gi"}}})
    (demand,) = database_demands(spec)
    assert misfit(demand, NODES, "the cluster") is None
    assert misfit(demand, [], "the cluster") is None  # nodes may yet be added
    unreported = {"metadata": {"name": "new"}, "status": {}}
    assert misfit(demand, [unreported], "the cluster") is None


def test_each_resource_fitting_some_node_but_not_together_is_refused() -> None:
    spec = spec_with(hardware={"resources": {"requests": {"cpu": "6", "memory": "30Gi"}}})
    (demand,) = database_demands(spec)
    nodes = [node("cpu-rich", "8", "4Gi"), node("memory-rich", "2", "64Gi")]
    found = misfit(demand, nodes, "the cluster")
    assert found is not None
    assert (
        "spec.hardware.resources.requests.cpu, spec.hardware.resources.requests.memory"
        in (found[1])
    )
    assert "no single node" in found[1]


def test_an_extended_resource_no_node_has_is_refused() -> None:
    gpus = {"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}
    spec = spec_with(hardware={"resources": gpus})
    (demand,) = database_demands(spec)
    found = misfit(demand, NODES, "the cluster")
    assert found is not None
    assert found[1].startswith("spec.hardware.resources.requests.nvidia.com/gpu: 1 per database")


def test_runner_pods_and_sharded_routers_are_checked_with_their_own_fields() -> None:
    spec = spec_with(runner={"resources": {"requests": {"memory": "40Gi"}}})
    demand = runner_demand(spec)
    assert demand is not None
    found = misfit(demand, NODES, pool_name({"pool": "load"}, "spec.runner.nodeSelector"))
    assert found is not None
    assert found[1].startswith("spec.runner.resources.requests.memory: 40Gi per runner pod")
    assert "the pool spec.runner.nodeSelector={pool=load}" in found[1]

    sharded = spec_with(
        targets=[{"name": "m", "engine": "mongodb", "topology": "sharded", "shards": 2}],
        hardware={"mongosResources": {"requests": {"cpu": "16"}}},
    )
    kinds = {d.pods: d for d in database_demands(sharded)}
    assert set(kinds) == {"config-server", "mongos"}  # the data pods request nothing
    found = misfit(kinds["mongos"], NODES, "the cluster")
    assert found is not None
    assert found[1].startswith("spec.hardware.mongosResources.requests.cpu: 16 per mongos pod")
    # Defaults (500m / 1Gi config servers) fit.
    assert misfit(kinds["config-server"], NODES, "the cluster") is None


def test_external_targets_deploy_nothing_to_fit() -> None:
    ext = {"name": "e", "engine": "mariadb",
           "external": {"uriSecretRef": {"name": "s", "key": "uri"}}}  # fmt: skip
    spec = spec_with(targets=[ext], hardware={"resources": {"requests": {"cpu": "64"}}})
    assert database_demands(spec) == []
