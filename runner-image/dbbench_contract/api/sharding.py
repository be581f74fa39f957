"""``spec.targets[].sharding``: where a sharded MongoDB target's processes run.

Field benchmark 2 ran its three shard processes on one 24 GB server (about
7 GB each) and mongos on the load machine. Without this block every shard
member is a pod of its own with the target's whole `hardware.resources`, the
config servers and one mongos router run server-side on the run's node pool.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from .base import ApiModel, Problem, Rule
from .placement import LabelValue, Resources
from .units import parse_quantity

if TYPE_CHECKING:
    from .spec import BenchmarkRunSpec
    from .targets import Target

ShardPlacement = Literal["spread", "colocated"]
RouterPlacement = Literal["server", "client"]
# What a co-located target's resources may name: what can be split between
# processes (a GPU or another extended resource cannot be shared this way).
SPLITTABLE_RESOURCES = ("cpu", "memory", "ephemeral-storage")

_COMPONENT_SELECTOR = (
    " When set (even empty: any node) it replaces the target's hardware.nodeSelector for "
    "these pods; unset, they use it. Tolerations and affinity stay the hardware's."
)


class ShardServers(ApiModel):
    """Where the shards' mongod pods run."""

    placement: ShardPlacement = Field(
        default="spread",
        description=(
            "spread (default): every shard member is a pod with the target's whole "
            "hardware.resources, spread over the pool's nodes (preferred: a pool with fewer "
            "nodes shares them). colocated: every shard pod (shards x members) on one node "
            "(required pod affinity), the target's hardware.resources split evenly between "
            "them (cpu, memory, ephemeral-storage; each WiredTiger cache sized from its "
            "share), as field benchmark 2 ran three mongods on one 24 GB server; "
            "hardware.pricePerHour then counts that node once. Needs a memory limit to split."
        ),
    )
    node_selector: dict[str, LabelValue] | None = Field(
        default=None,
        max_length=16,
        description="Node labels the shard pods must match." + _COMPONENT_SELECTOR,
    )


class ConfigServers(ApiModel):
    """Where the config-server replica set runs."""

    node_selector: dict[str, LabelValue] | None = Field(
        default=None,
        max_length=16,
        description="Node labels the config-server pods must match." + _COMPONENT_SELECTOR,
    )


class Routers(ApiModel):
    """The mongos routers the runner connects through."""

    placement: RouterPlacement = Field(
        default="server",
        description=(
            "server (default): `count` mongos pods beside the databases behind one Service "
            "(ClientIP affinity keeps each runner pod on one router). client: a mongos "
            "container in every runner pod (a sidecar with the target's image and "
            "hardware.mongosResources), the runner connecting to its own router on "
            "localhost, as field benchmark 2 ran mongos on the load machine; each step's "
            "pods start their routers afresh (they load the routing table on first use, "
            "within the phase's warm-up). One server-side mongos is still deployed for the "
            "operator's setup (addShard, shardCollection), on the config servers' nodes; "
            "the runner never uses it."
        ),
    )
    count: int | None = Field(
        default=None,
        ge=1,
        le=16,
        description=(
            "placement server: number of mongos routers (default 1). With client there is "
            "one per runner pod (spec.runner.pods)."
        ),
    )
    node_selector: dict[str, LabelValue] | None = Field(
        default=None,
        max_length=16,
        description=(
            "placement server: node labels the mongos pods must match." + _COMPONENT_SELECTOR
        ),
    )

    RULES = (
        Rule(
            cel="self.placement != 'client' || !has(self.count)",
            message=(
                "count must be unset with placement client: there is one router in each "
                "runner pod (set spec.runner.pods), or use placement server for a number of "
                "routers of their own"
            ),
            field="count",
            reason="FieldValueForbidden",
            holds=lambda r: r.placement != "client" or r.count is None,
        ),
        Rule(
            cel="self.placement != 'client' || !has(self.nodeSelector)",
            message=(
                "nodeSelector must be unset with placement client: the routers run inside "
                "the runner pods, which spec.runner.nodeSelector places; remove "
                "routers.nodeSelector or use placement server"
            ),
            field="nodeSelector",
            reason="FieldValueForbidden",
            holds=lambda r: r.placement != "client" or r.node_selector is None,
        ),
    )

    @property
    def server_side(self) -> int:
        """mongos pods deployed beside the databases: `count`, or the operator's one."""
        return 1 if self.placement == "client" else (self.count or 1)


class Sharding(ApiModel):
    """topology sharded: where the shards, config servers and routers run."""

    shards: ShardServers = Field(
        default_factory=ShardServers, description="The shards' pods: placement and nodes."
    )
    config_servers: ConfigServers = Field(
        default_factory=ConfigServers, description="The config servers' pods: their nodes."
    )
    routers: Routers = Field(
        default_factory=Routers, description="The mongos routers: where, how many, their nodes."
    )


# Rules of `targets[].sharding`, owned by Target (they read its topology and external).
SHARDING_RULES = (
    Rule(
        cel="!has(self.sharding) || has(self.external) || self.topology == 'sharded'",
        message=(
            "sharding places a sharded cluster's shards, config servers and routers: set "
            "topology sharded, or remove sharding"
        ),
        field="sharding",
        reason="FieldValueForbidden",
        holds=lambda t: t.sharding is None or t.external is not None or t.topology == "sharded",
    ),
    Rule(
        cel="!has(self.sharding) || !has(self.external)",
        message=(
            "sharding must be unset for an external target: nothing is deployed, so there "
            "are no shards to place and no config servers for a client-side mongos; point "
            "external.uriSecretRef at your cluster's own router"
        ),
        field="sharding",
        reason="FieldValueForbidden",
        holds=lambda t: t.sharding is None or t.external is None,
    ),
)


def colocated(target: Target) -> bool:
    return target.sharding is not None and target.sharding.shards.placement == "colocated"


def client_routers(target: Target) -> bool:
    return target.sharding is not None and target.sharding.routers.placement == "client"


def shard_pods(target: Target) -> int:
    """Data-bearing pods of a sharded target (shards x members)."""
    return (target.shards or 1) * target.effective_members


def processes_sharing(target: Target) -> int:
    """How many server processes share the target's hardware.resources: every shard
    pod when they are co-located, else 1 (each pod has them whole)."""
    return shard_pods(target) if colocated(target) else 1


def split_quantity(amount: Decimal, resource: str, ways: int) -> str:
    """One process's share of `amount`, rounded down: millicores for cpu, whole
    MiB (bytes below 1 MiB) for the byte-sized resources."""
    share = amount / ways
    if resource == "cpu":
        millicores = int(share * 1000)
        return str(millicores // 1000) if millicores % 1000 == 0 else f"{millicores}m"
    mib = int(share) // 2**20
    if mib and mib % 1024 == 0:
        return f"{mib // 1024}Gi"
    return f"{mib}Mi" if mib else str(int(share))


def _resource_names(resources: Resources | None) -> set[str]:
    if resources is None:
        return set()
    return {*(resources.requests or {}), *(resources.limits or {})}


def _memory_set(resources: Resources | None) -> bool:
    """A memory limit (else request) the operator sizes the caches from."""
    return resources is not None and "memory" in {
        **(resources.limits or {}),
        **(resources.requests or {}),
    }


def sharding_problems(spec: BenchmarkRunSpec) -> Iterator[Problem]:
    """What the model's rules cannot see: a co-located target's resources (its own or
    the run's) must have a memory limit to split, and only splittable resources."""
    for i, target in enumerate(spec.targets):
        if not colocated(target) or target.external is not None:
            continue
        resources = spec.hardware_of(target).resources
        path = spec.hardware_path(i, "resources")
        pods = shard_pods(target)
        if not _memory_set(resources):
            yield Problem(
                f"{path}.limits.memory",
                f"sharding.shards.placement colocated splits the memory limit between the "
                f"{pods} shard processes (shards x members) on one node, and without one each "
                "mongod would size its cache from the whole node's memory: set "
                f"limits.memory to what the node gives all of them (e.g. 24Gi for "
                f"{_example(pods)}) or use placement spread",
            )
        others = sorted(_resource_names(resources) - set(SPLITTABLE_RESOURCES))
        if others:
            yield Problem(
                path,
                f"{', '.join(others)} cannot be split between co-located shard processes "
                f"(only {', '.join(SPLITTABLE_RESOURCES)}): remove them or use "
                "sharding.shards.placement spread",
            )


def _example(pods: int) -> str:
    return f"{pods} x {Decimal(24) / pods:.3g} GiB"


def split_resources(resources: dict[str, Any], ways: int) -> dict[str, Any]:
    """Each of `ways` co-located processes' resources (a Pod spec's block): every
    request and limit divided."""
    return {
        kind: {
            name: split_quantity(parse_quantity(str(v)), name, ways) for name, v in amounts.items()
        }
        for kind, amounts in resources.items()
    }
