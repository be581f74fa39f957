"""Whether a run may share the node with other tests' runs (pure: specs and figures
in, figures and problems out; the cluster is read by the caller).

`make e2e` runs the suite in two phases (docs/testing.md, "How `make e2e` runs"):
the tests not marked `disruptive` at once on several pytest-xdist workers, then
the disruptive ones alone. In the concurrent phase every run the suite applies
must:

- share its nodes (`hardware.exclusive: false`): an exclusive run holds the one
  node and every other worker's runs wait for it (WaitingForNodes);
- fit beside the other workers' runs: the runs a worker has on the node at once
  request at most its share of the node's allocatable resources (what the
  release's own pods leave, divided by the workers). A pod that does not fit
  waits as Unschedulable, and its run fails after `startupGrace` with a reason
  that is the suite's doing, not the product's.

CPU requests are lowered to `SHARED_CPU_REQUEST` per pod in that phase (limits
stay): requests only decide where pods fit, the node has 2 CPUs, and the
examples' 250-500m per pod would let two runs fill it. Memory requests stay as
written (24 GiB hold them; a MySQL pod needs its 1Gi).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from dbbench_contract.api import SpecError, parse_quantity, parse_spec

SHARED_CPU_REQUEST = "50m"
DISRUPTIVE_HINT = (
    "mark the test @pytest.mark.disruptive (it then runs alone, after the concurrent "
    "phase: docs/testing.md)"
)


@dataclass(frozen=True)
class Demand:
    """Requests on the node: CPU in cores, memory in bytes."""

    cpu: Decimal = Decimal(0)
    memory: Decimal = Decimal(0)

    def __add__(self, other: Demand) -> Demand:
        return Demand(self.cpu + other.cpu, self.memory + other.memory)

    def times(self, pods: int) -> Demand:
        return Demand(self.cpu * pods, self.memory * pods)

    def fits(self, share: Demand) -> bool:
        return self.cpu <= share.cpu and self.memory <= share.memory

    def __str__(self) -> str:
        return f"{self.cpu.normalize():f} cpu, {self.memory / 2**20:.0f} MiB"


def pod_requests(resources: Mapping[str, Any] | None) -> Demand:
    """One pod's requests; a resource with a limit only requests its limit (as the
    API server defaults it)."""
    resources = resources or {}
    requests, limits = resources.get("requests") or {}, resources.get("limits") or {}

    def amount(name: str) -> Decimal:
        value = requests.get(name, limits.get(name))
        return Decimal(0) if value is None else parse_quantity(str(value))

    return Demand(amount("cpu"), amount("memory"))


def _dump(model: Any) -> dict[str, Any] | None:
    return None if model is None else dict(model.model_dump(by_alias=True, exclude_none=True))


def pods(spec: Mapping[str, Any]) -> Iterator[tuple[int, Demand]]:
    """(how many, each one's requests) for every kind of pod the run deploys at once:
    each deployed target's members (times its shards) and one step's runner pods
    (a sharded cluster's config servers and routers are left out: MongoDB never
    runs on the node). A spec the operator would refuse deploys nothing."""
    try:
        parsed = parse_spec(spec)
    except SpecError:
        return
    for target in parsed.targets:
        if target.external is None:
            members = target.effective_members * (target.shards or 1)
            yield members, pod_requests(_dump(parsed.hardware_of(target).resources))
    yield parsed.runner.pods, pod_requests(_dump(parsed.runner.resources))


def demand(spec: Mapping[str, Any], allocatable: Demand) -> Demand:
    """What the run requests of the node at most; nothing when one of its pods is
    larger than the node (the operator refuses it at once: NoNodeFits)."""
    found = list(pods(spec))
    if any(not each.fits(allocatable) for _, each in found):
        return Demand()
    total = Demand()
    for count, each in found:
        total += each.times(count)
    return total


def exclusive(spec: Mapping[str, Any]) -> bool:
    try:
        return parse_spec(spec).hardware.exclusive
    except SpecError:
        return False  # refused at admission: it never holds the node


def _resource_blocks(spec: dict[str, Any]) -> Iterator[dict[str, Any]]:
    hardware = [spec.get("hardware") or {}]
    hardware += [t.get("hardware") or {} for t in spec.get("targets") or []]
    for block in hardware:
        for key in ("resources", "configServerResources", "mongosResources"):
            if isinstance(block.get(key), dict):
                yield block[key]
    runner = spec.get("runner") or {}
    if isinstance(runner.get("resources"), dict):
        yield runner["resources"]


def lowered_cpu_requests(spec: Mapping[str, Any], allocatable: Demand) -> dict[str, Any]:
    """A copy of the spec whose pods request at most SHARED_CPU_REQUEST of CPU each
    (limits unchanged). A spec with a pod larger than the node is left alone: it is
    there to be refused (NoNodeFits), and a lower request would let it start."""
    copied: dict[str, Any] = copy.deepcopy(dict(spec))
    if any(not each.fits(allocatable) for _, each in pods(copied)):
        return copied
    low = parse_quantity(SHARED_CPU_REQUEST)
    for resources in _resource_blocks(copied):
        wanted = pod_requests(resources).cpu
        if wanted > low:
            resources.setdefault("requests", {})["cpu"] = SHARED_CPU_REQUEST
    return copied


def sharing_problems(
    name: str, spec: Mapping[str, Any], others: Demand, share: Demand, allocatable: Demand
) -> list[str]:
    """Why the run may not join the concurrent phase beside `others` (this worker's
    runs still on the node) within the worker's `share`; empty when it may."""
    problems = []
    if exclusive(spec):
        problems.append(
            f"run {name}: spec.hardware.exclusive is true (the default when unset): it "
            "would hold the node and make every other worker's runs wait; set "
            f"hardware.exclusive: false, or {DISRUPTIVE_HINT}"
        )
    wanted = demand(spec, allocatable)
    if not (others + wanted).fits(share):
        problems.append(
            f"run {name} requests {wanted} beside this worker's other runs' {others}: "
            f"more than the worker's share of the node ({share}); make its data set, "
            f"members or runner pods smaller, or {DISRUPTIVE_HINT}"
        )
    return problems
