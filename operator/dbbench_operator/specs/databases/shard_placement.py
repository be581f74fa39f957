"""Where a sharded target's shards, config servers and routers run (pure).

The API's `targets[].sharding` becomes the request's `ShardingRequest` (each
component's nodeSelector in force, the server-side routers) and the chart's
values. Co-located shards share one node: each shard pod gets an even share
of the target's resources, and everything sized from a pod's memory (the
WiredTiger cache, the environment's data-to-memory ratio) follows its share.
"""

from __future__ import annotations

from typing import Any

from dbbench_contract.api import Target
from dbbench_contract.api.sharding import processes_sharing, split_resources
from dbbench_operator.specs.databases.request import ShardingRequest, TopologyRequest
from dbbench_operator.specs.databases.sizing import config_server_settings


def _selector(own: dict[str, str] | None) -> dict[str, str] | None:
    """A component's own nodeSelector (even empty: any node); None: the chart uses
    the hardware's nodeSelector, as for every pod before this field existed."""
    return None if own is None else dict(own)


def sharding_request(target: Target) -> ShardingRequest:
    """The request's sharding block for one target (defaults unless sharded and set)."""
    sharding = target.sharding
    if target.topology != "sharded" or sharding is None:
        return ShardingRequest()
    routers = sharding.routers
    return ShardingRequest(
        shard_placement=sharding.shards.placement,
        shard_node_selector=_selector(sharding.shards.node_selector),
        config_server_node_selector=_selector(sharding.config_servers.node_selector),
        router_placement=routers.placement,
        routers=routers.server_side,
        router_node_selector=_selector(routers.node_selector),
    )


def shard_resources(target: Target, resources: dict[str, Any]) -> dict[str, Any]:
    """Each data-bearing pod's resources: the target's, split evenly between its
    shard pods when they are co-located on one node."""
    ways = processes_sharing(target)
    return resources if ways == 1 or not resources else split_resources(resources, ways)


def chart_values(request: TopologyRequest) -> dict[str, Any]:
    """The mongodb chart's values of a sharded target beyond the common ones."""
    hardware, sharding = request.hardware, request.sharding
    # With client-side routers the one server-side mongos serves the operator's
    # setup only: it runs where the config servers do, never on the load's nodes.
    router_selector = sharding.router_node_selector
    if sharding.router_placement == "client":
        router_selector = sharding.config_server_node_selector
    return {
        "shards": request.shards,
        "shardPlacement": sharding.shard_placement,
        "shardNodeSelector": sharding.shard_node_selector,
        "configServer": {
            "resources": hardware.config_server_resources,
            "settings": config_server_settings(request),
            "nodeSelector": sharding.config_server_node_selector,
        },
        "mongos": {
            "resources": hardware.mongos_resources,
            "replicas": sharding.routers,
            "nodeSelector": router_selector,
        },
    }
