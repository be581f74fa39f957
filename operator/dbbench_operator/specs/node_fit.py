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


def _target_demands(spec: BenchmarkRunSpec, index: int) -> list[Demand]:
    """The database pods of targets[index], on its hardware (its own or the run's)."""
    target = spec.targets[index]
    hw = spec.hardware_of(target)
    pool = dict(hw.node_selector or {})
    pool_field = spec.hardware_path(index, "node_selector")

    def demand(pods: str, field: str, resources: Mapping[str, Any] | None) -> Demand:
        path = spec.hardware_path(index, field)
        return Demand(pods, _effective(path, resources), pool, pool_field)

    demands = [demand("database", "resources", _dump(hw.resources))]
    if target.topology == "sharded":
        config = _dump(hw.config_server_resources) or DEFAULT_CONFIG_SERVER_RESOURCES
        mongos = _dump(hw.mongos_resources) or DEFAULT_MONGOS_RESOURCES
        demands += [
            demand("config-server", "config_server_resources", config),
            demand("mongos", "mongos_resources", mongos),
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


def node_pools(spec: BenchmarkRunSpec) -> list[dict[str, str]]:
    """The nodeSelectors of the run's database pods, one per distinct pool (the run's
    own when it deploys nothing): the nodes an exclusive run holds."""
    pools: list[dict[str, str]] = []
    for target in spec.targets:
        if target.external is None:
            pool = dict(spec.hardware_of(target).node_selector or {})
            if pool not in pools:
                pools.append(pool)
    return pools or [dict(spec.hardware.node_selector or {})]


def runner_demand(spec: BenchmarkRunSpec) -> Demand | None:
    amounts = _effective("spec.runner.resources", _dump(spec.runner.resources))
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
