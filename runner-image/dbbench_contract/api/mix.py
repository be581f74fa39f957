"""``spec.phases[].mix``: the operation types of a mix phase, and how they
share the connections.

Two workloads share one set of weights (``by``):

- ``operations`` (default): every connection draws each operation's type by
  weight, so every connection runs every type; an operation waits for the one
  before it on its connection, whatever their types (a slow insert delays the
  reads behind it).
- ``connections``: thread groups. The weights split the run's connections
  (runner.pods x threads) into groups; each connection runs only its group's
  type, so a slow insert stalls only the insert group.

How a run's connections form the groups (``connection_groups``) is a pure
function of the weights and the pod and thread counts, so every runner pod
computes the same split and the summary records it without asking anyone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from .base import ApiModel, Rule

MixBy = Literal["operations", "connections"]
# The operation types of a mix, in the order groups take their connections.
MIX_OPERATIONS = ("read", "insert", "update", "scan", "readModifyWrite")


class Mix(ApiModel):
    """Relative weights of operation types in a mix phase (e.g. read 85, insert 15,
    update 5), applied per operation (default) or per connection (`by`)."""

    read: int = Field(default=0, ge=0, le=1000, description="Weight of point reads by key.")
    insert: int = Field(
        default=0,
        ge=0,
        le=1000,
        description="Weight of inserts of new records (keys past every record the run loads).",
    )
    update: int = Field(
        default=0, ge=0, le=1000, description="Weight of updates of one record by key."
    )
    scan: int = Field(
        default=0,
        ge=0,
        le=1000,
        description="Weight of short range scans (100 records from a key).",
    )
    read_modify_write: int = Field(
        default=0,
        ge=0,
        le=1000,
        description=(
            "Weight of read-modify-write operations (YCSB F): read one record by key, then "
            "update it; measured as one operation (readModifyWrite) from the read's start."
        ),
    )
    by: MixBy = Field(
        default="operations",
        description=(
            "What the weights divide. operations (default): every connection draws each "
            "operation's type by weight (probability weight / sum of weights), so every "
            "connection runs every type and a slow insert delays the reads queued behind it "
            "on its connection. connections: thread groups; the weights divide the run's "
            "connections (runner.pods x threads) and each connection runs only its group's "
            "type (read 85, insert 15, update 5 of 105 connections: 85 connections only read, "
            "15 only insert, 5 only update), so a slow insert stalls only the insert group; "
            "each group's operations follow from its connections' speed, not from the "
            "weights. Group sizes: each weight's share of the connections, rounded by largest "
            "remainder, at least 1 per non-zero weight (85:15:5 of 100: 81, 14, 5); needs at "
            "least as many connections as non-zero weights. Across runner pods: connection t "
            "of pod k is the run's connection t x pods + k, and the groups take the run's "
            "connections in order read, insert, update, scan, readModifyWrite, so every pod "
            "holds nearly the same share of each group. The report shows each group's "
            "connections, throughput and latency."
        ),
    )

    RULES = (
        Rule(
            cel="self.read + self.insert + self.update + self.scan + self.readModifyWrite > 0",
            message=(
                "mix: read + insert + update + scan + readModifyWrite must add up to more than 0"
            ),
            holds=lambda m: m.read + m.insert + m.update + m.scan + m.read_modify_write > 0,
        ),
    )

    @property
    def weights(self) -> tuple[int, ...]:
        """The weights in MIX_OPERATIONS order."""
        return (self.read, self.insert, self.update, self.scan, self.read_modify_write)

    @property
    def groups(self) -> tuple[str, ...]:
        """The operation types with a non-zero weight, in MIX_OPERATIONS order."""
        return tuple(k for k, w in zip(MIX_OPERATIONS, self.weights, strict=True) if w > 0)


def group_sizes(mix: Mix, connections: int) -> dict[str, int]:
    """Connections of each operation type's group (non-zero weights only, in
    MIX_OPERATIONS order), adding up to `connections`.

    Largest remainder (Hamilton) apportionment, ties to the earlier type; then
    a group rounded to nothing takes one connection from the largest group (the
    user asked for that type: a run without it would be another workload).
    """
    kinds = mix.groups
    if connections < len(kinds):
        raise ValueError(
            f"{connections} connections cannot form {len(kinds)} groups ({', '.join(kinds)})"
        )
    weights = {k: w for k, w in zip(MIX_OPERATIONS, mix.weights, strict=True) if w > 0}
    total = sum(weights.values())
    sizes = {k: w * connections // total for k, w in weights.items()}
    left = connections - sum(sizes.values())
    by_remainder = sorted(kinds, key=lambda k: (-(weights[k] * connections % total),
                                                kinds.index(k)))  # fmt: skip
    for kind in by_remainder[:left]:
        sizes[kind] += 1
    for kind in kinds:
        if sizes[kind] == 0:
            largest = max(kinds, key=lambda k: (sizes[k], -kinds.index(k)))
            sizes[largest] -= 1
            sizes[kind] = 1
    return sizes


@dataclass(frozen=True)
class Seat:
    """One connection's place in the thread groups."""

    operation: str  # the only operation type the connection runs
    rank: int  # 0-based, among its group's connections
    size: int  # connections in its group (over all pods)


def seat_of(mix: Mix, pods: int, threads: int, pod: int, thread: int) -> Seat:
    """The group of thread `thread` of runner pod `pod` (of `pods` x `threads`).

    Connections are numbered across pods first (t x pods + k) and the groups
    take contiguous numbers, so each pod holds nearly the same share of every
    group: a pod's CPU serves the same mix as every other pod's.
    """
    if not (0 <= pod < pods and 0 <= thread < threads):
        raise ValueError(f"pod {pod} thread {thread} not in {pods} pods x {threads} threads")
    number = thread * pods + pod
    start = 0
    for kind, size in group_sizes(mix, pods * threads).items():
        if number < start + size:
            return Seat(kind, number - start, size)
        start += size
    raise AssertionError("group_sizes covers every connection")  # pragma: no cover


def groups_problem(mix: Mix, connections: int) -> str | None:
    """Why `connections` cannot form `mix`'s thread groups (None: they can)."""
    if mix.by != "connections" or connections >= len(mix.groups):
        return None
    return (
        f"by: connections gives each of the {len(mix.groups)} non-zero weights "
        f"({', '.join(mix.groups)}) its own connections, but the phase has {connections} "
        "(runner.pods x threads): raise threads or runner.pods to at least "
        f"{len(mix.groups)} connections, set a weight to 0, or use by: operations"
    )
