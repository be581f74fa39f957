"""Whether a run's pods can fit any node of their pool at all (pure).

A pod whose requests exceed every node's allocatable resources waits as
Unschedulable forever; the operator refuses such a run at once instead,
naming the field and the largest node it found. Only capacity is compared
(what other pods use comes and goes): a run that fits on paper but not in
what is free waits, says Unschedulable, and fails after spec.startupGrace.
A pool with no nodes (or none that report their resources) is not judged:
nodes may yet be added.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from decimal import Decimal
from typing import Any

from dbbench_contract.api import BenchmarkRunSpec, Resources, parse_quantity
from dbbench_contract.api.sharding import client_routers
from dbbench_contract.api.units import format_bytes
from dbbench_operator.specs.databases.request import (
    DEFAULT_CONFIG_SERVER_RESOURCES,
    DEFAULT_MONGOS_RESOURCES,
)

NO_NODE_FITS = "NoNodeFits"
Node = Mapping[str, Any]


@dataclass(frozen=True)
class Demand:
    """What one kind of pod asks of a node: {resource: (field path, amount)}, on the
    nodes matching `pool` (a nodeSelector; empty: every node), set at `pool_field`."""

    pods: str  # "database", "config-server", "mongos", "runner"
    amounts: dict[str, tuple[str, Decimal]]
    pool: dict[str, str] = dataclass_field(default_factory=dict)
    pool_field: str = "spec.hardware.nodeSelector"


def _effective(prefix: str, resources: Mapping[str, Any] | None) -> dict[str, tuple[str, Decimal]]:
    """Requests per resource; a resource with only a limit requests its limit
    (as Kubernetes defaults it)."""
    resources = resources or {}
    requests = resources.get("requests") or {}
    limits = resources.get("limits") or {}
    out: dict[str, tuple[str, Decimal]] = {}
    for name in sorted({*requests, *limits}):
        key = "requests" if name in requests else "limits"
        out[name] = (f"{prefix}.{key}.{name}", parse_quantity(resources[key][name]))
    return out


def _dump(resources: Resources | None) -> dict[str, Any] | None:
    return None if resources is None else resources.model_dump(by_alias=True, exclude_none=True)


def component_pool(
    spec: BenchmarkRunSpec, index: int, component: str
) -> tuple[dict[str, str], str] | None:
    """(nodeSelector, its field) of a sharded target's component when its own
    `sharding.<component>.nodeSelector` is set; None: the hardware's."""
    sharding = spec.targets[index].sharding
    if sharding is None or spec.targets[index].topology != "sharded":
        return None
    own = {"shards": sharding.shards.node_selector,
           "configServers": sharding.config_servers.node_selector,
           "routers": sharding.routers.node_selector}[component]  # fmt: skip
    if component == "routers" and sharding.routers.placement == "client":
        # The server-side router left is the operator's: on the config servers' nodes.
        return component_pool(spec, index, "configServers")
    if own is None:
        return None
    return dict(own), f"spec.targets[{index}].sharding.{component}.nodeSelector"


def _target_demands(spec: BenchmarkRunSpec, index: int) -> list[Demand]:
    """The database pods of targets[index], on its hardware (its own or the run's),
    each kind on its pool (a sharded target's components may have their own)."""
    target = spec.targets[index]
    hw = spec.hardware_of(target)
    pool = (dict(hw.node_selector or {}), spec.hardware_path(index, "node_selector"))

    def demand(pods: str, field: str, resources: Mapping[str, Any] | None, part: str) -> Demand:
        path = spec.hardware_path(index, field)
        where = component_pool(spec, index, part) or pool
        return Demand(pods, _effective(path, resources), where[0], where[1])

    # Co-located shards share one node: their requests together (the target's
    # resources, before the split between them) must fit it, as one pod's would.
    demands = [demand("database", "resources", _dump(hw.resources), "shards")]
    if target.topology == "sharded":
        config = _dump(hw.config_server_resources) or DEFAULT_CONFIG_SERVER_RESOURCES
        mongos = _dump(hw.mongos_resources) or DEFAULT_MONGOS_RESOURCES
        demands += [
            demand("config-server", "config_server_resources", config, "configServers"),
            demand("mongos", "mongos_resources", mongos, "routers"),
        ]
    return demands


def database_demands(spec: BenchmarkRunSpec) -> list[Demand]:
    """The database pods' requests, by kind of pod and pool, for the targets this run
    deploys, each named by the field in force; targets on the run's fields ask once."""
    found: list[Demand] = []
    for index, target in enumerate(spec.targets):
        if target.external is not None:
            continue
        for demand in _target_demands(spec, index):
            if demand.amounts and demand not in found:
                found.append(demand)
    return found


def database_selectors(spec: BenchmarkRunSpec) -> Iterator[tuple[dict[str, str], str]]:
    """(nodeSelector, the field that sets it) of each deployed target's pods, per
    component: a sharded target's components their own when set, else the
    target's hardware's (its own, else the run's)."""
    for index, target in enumerate(spec.targets):
        if target.external is None:
            pool = dict(spec.hardware_of(target).node_selector or {})
            field = spec.hardware_path(index, "node_selector")
            for part in ("shards", "configServers", "routers"):
                yield component_pool(spec, index, part) or (pool, field)


def node_pools(spec: BenchmarkRunSpec) -> list[dict[str, str]]:
    """The nodeSelectors of the run's database pods, one per distinct pool (the run's
    own when it deploys nothing): the nodes an exclusive run holds."""
    pools: list[dict[str, str]] = []
    for selector, _ in database_selectors(spec):
        if selector not in pools:
            pools.append(selector)
    return pools or [dict(spec.hardware.node_selector or {})]


def runner_demand(spec: BenchmarkRunSpec) -> Demand | None:
    """A runner pod's requests: its container's, plus the mongos sidecar runner pods
    carry for targets with client-side routers (per resource, the largest router's:
    each step's pods carry their target's)."""
    amounts = _effective("spec.runner.resources", _dump(spec.runner.resources))
    sidecar: dict[str, tuple[str, Decimal]] = {}
    for index, target in enumerate(spec.targets):
        if not client_routers(target) or target.external is not None:
            continue
        path = spec.hardware_path(index, "mongos_resources")
        mongos = _dump(spec.hardware_of(target).mongos_resources) or DEFAULT_MONGOS_RESOURCES
        for name, (field, amount) in _effective(path, mongos).items():
            if name not in sidecar or amount > sidecar[name][1]:
                sidecar[name] = (field, amount)
    for name, (field, amount) in sidecar.items():
        mine = amounts.get(name)
        amounts[name] = (field, amount) if mine is None else (
            f"{mine[0]} + {field}", mine[1] + amount)  # fmt: skip
    return Demand("runner", amounts) if amounts else None


def _allocatable(node: Node) -> dict[str, Decimal] | None:
    found = ((node.get("status") or {}).get("allocatable")) or {}
    if not found:
        return None  # a node that has not reported its resources yet
    return {name: parse_quantity(str(value)) for name, value in found.items()}


def _show(resource: str, amount: Decimal) -> str:
    if resource == "memory" or resource.endswith("storage") or resource.startswith("hugepages"):
        return format_bytes(amount)
    return f"{amount.normalize():f}"


def _sized(nodes: Sequence[Node]) -> Iterator[tuple[str, dict[str, Decimal]]]:
    for node in nodes:
        amounts = _allocatable(node)
        if amounts is not None:
            yield str((node.get("metadata") or {}).get("name")), amounts


def misfit(demand: Demand, nodes: Sequence[Node], pool: str) -> tuple[str, str] | None:
    """(reason, message) when no node of the pool can hold one such pod, else None."""
    sized = list(_sized(nodes))
    if not sized:
        return None
    wanted = demand.amounts
    if any(all(have.get(r, Decimal(0)) >= amount for r, (_, amount) in wanted.items())
           for _, have in sized):  # fmt: skip
        return None
    for resource, (field, amount) in wanted.items():
        name, have = max(sized, key=lambda n: n[1].get(resource, Decimal(0)))
        largest = have.get(resource, Decimal(0))
        if amount > largest:
            return NO_NODE_FITS, (
                f"{field}: {_show(resource, amount)} per {demand.pods} pod fits no node of "
                f"{pool}: the largest, {name}, has {_show(resource, largest)} {resource} "
                f"allocatable ({len(sized)} node(s) seen); lower {field} or add larger nodes"
            )
    fields = ", ".join(field for field, _ in wanted.values())
    return NO_NODE_FITS, (
        f"{fields}: together they fit no single node of {pool} ({len(sized)} node(s) seen, "
        f"each short of one of them); lower one of them or add larger nodes"
    )


def pool_name(selector: Mapping[str, str] | None, field: str) -> str:
    if not selector:
        return "the cluster"
    labels = ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
    return f"the pool {field}={{{labels}}}"
