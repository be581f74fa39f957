"""A sharded target's components on their own pools, before anything is deployed
(pure: node objects as the API server returns them): each component's requests
against its own nodeSelector's nodes, co-located shards' requests together
against one node, a runner pod's mongos sidecar with the runner's, and an
exclusive run holding every component's pool."""

from __future__ import annotations

from typing import Any

from dbbench_contract.api import parse_spec
from dbbench_operator.specs.node_fit import (
    database_demands,
    misfit,
    node_pools,
    pool_name,
    runner_demand,
)


def node(name: str, cpu: str, memory: str) -> dict[str, Any]:
    allocatable = {"cpu": cpu, "memory": memory, "pods": "110"}
    return {"metadata": {"name": name}, "status": {"allocatable": allocatable}}


def spec_with(sharding: dict[str, Any], **extra: Any) -> Any:
    return parse_spec({
        "targets": [{"name": "sharded", "engine": "mongodb", "topology": "sharded", "shards": 3,
                     "members": 1, "sharding": sharding}],
        "hardware": {"resources": {"requests": {"cpu": "6", "memory": "24Gi"}},
                     "nodeSelector": {"pool": "db"}},
        "phases": [{"name": "load", "type": "insert"}],
        **extra,
    })  # fmt: skip


def test_each_component_is_checked_on_its_own_pool() -> None:
    spec = spec_with({
        "shards": {"nodeSelector": {"pool": "db-24gb"}},
        "configServers": {"nodeSelector": {"pool": "meta"}},
        "routers": {"nodeSelector": {"pool": "routers"}},
    })  # fmt: skip
    pools = {d.pods: (d.pool, d.pool_field) for d in database_demands(spec)}
    assert pools == {
        "database": ({"pool": "db-24gb"}, "spec.targets[0].sharding.shards.nodeSelector"),
        "config-server": ({"pool": "meta"},
                          "spec.targets[0].sharding.configServers.nodeSelector"),
        "mongos": ({"pool": "routers"}, "spec.targets[0].sharding.routers.nodeSelector"),
    }  # fmt: skip
    # An exclusive run holds the nodes of every pool its pods may land on.
    assert node_pools(spec) == [{"pool": "db-24gb"}, {"pool": "meta"}, {"pool": "routers"}]


def test_colocated_shards_ask_one_node_for_all_of_them() -> None:
    spec = spec_with({"shards": {"placement": "colocated"}})
    (shards,) = [d for d in database_demands(spec) if d.pods == "database"]
    # The target's 24Gi, not a third of it: the node holds the three shard processes.
    found = misfit(shards, [node("small", "8", "16Gi")], pool_name(shards.pool, shards.pool_field))
    assert found is not None
    assert found[1].startswith("spec.hardware.resources.requests.memory: 24Gi per database pod")
    assert misfit(shards, [node("big", "8", "32Gi")], "the pool") is None


def test_a_runner_pod_with_its_router_asks_for_both() -> None:
    spec = spec_with(
        {"routers": {"placement": "client"}},
        runner={"resources": {"requests": {"cpu": "2", "memory": "2Gi"}}},
    )
    demand = runner_demand(spec)
    assert demand is not None
    # The sidecar's default (1 CPU, 1Gi) on top of the runner container's requests.
    field, amount = demand.amounts["memory"]
    assert (field, str(amount)) == (
        "spec.runner.resources.requests.memory + spec.hardware.mongosResources.requests.memory",
        str(3 * 2**30),
    )  # fmt: skip
    found = misfit(demand, [node("load", "4", "2560Mi")], "the cluster")
    assert found is not None
    assert "+ spec.hardware.mongosResources" in found[1]
    # The operator's own router stays on the config servers' pool, the hardware's here.
    (mongos,) = [d for d in database_demands(spec) if d.pods == "mongos"]
    assert mongos.pool == {"pool": "db"}


def test_server_side_routers_add_nothing_to_the_runner() -> None:
    spec = spec_with({"routers": {"count": 3}})
    assert runner_demand(spec) is None
