"""A run naming a node pool the cluster does not have is refused at once (pure:
the spec and node objects in, a refusal out).

Without this the run's pods would wait as Unschedulable and the run would fail
only after spec.startupGrace, with the scheduler's "didn't match Pod's node
affinity/selector", which names neither the field nor the selector.

Refused: a nodeSelector that matches no node while the cluster's nodes do carry
each of its label keys (`dbbench.io/pool` in use, and no node has
`dbbench.io/pool=db-huge`): a misspelt or missing pool; the message lists the
values the nodes have. Not judged: a cluster that has reported no node yet, and a
selector with a key no node carries (a pool an autoscaler may yet add under a
label of its own): those pods wait, and fail after spec.startupGrace as before.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from dbbench_contract.api import BenchmarkRunSpec
from dbbench_operator.specs.node_fit import database_selectors

NO_NODE_IN_POOL = "NoNodeInPool"
_SHOWN_VALUES = 8


def run_selectors(spec: BenchmarkRunSpec) -> Iterator[tuple[dict[str, str], str]]:
    """(nodeSelector, the field that sets it) of every pod kind the run deploys:
    each deployed target's (its own hardware's, else the run's; a sharded target's
    components their own when set), then the runner pods'. Empty ones are skipped."""
    found = list(database_selectors(spec))
    if spec.runner.node_selector:
        found.append((dict(spec.runner.node_selector), "spec.runner.nodeSelector"))
    seen: list[tuple[dict[str, str], str]] = []
    for pair in found:
        if pair[0] and pair not in seen:
            seen.append(pair)
            yield pair


def _labels(node: Mapping[str, Any]) -> Mapping[str, str]:
    return (node.get("metadata") or {}).get("labels") or {}


def absent_pool(
    selector: Mapping[str, str], field: str, nodes: Sequence[Mapping[str, Any]]
) -> tuple[str, str] | None:
    """(reason, message) when no node matches `selector` though the nodes carry
    every one of its keys; None when a node matches or the pool is not judged."""
    if not selector or not nodes:
        return None
    if any(all(_labels(n).get(k) == v for k, v in selector.items()) for n in nodes):
        return None
    if not all(any(k in _labels(n) for n in nodes) for k in selector):
        return None
    wanted = ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
    seen = []
    for key in sorted(selector):
        values = sorted({str(_labels(n)[key]) for n in nodes if key in _labels(n)})
        more = f" and {len(values) - _SHOWN_VALUES} more" if len(values) > _SHOWN_VALUES else ""
        seen.append(f"{key}: {', '.join(values[:_SHOWN_VALUES])}{more}")
    return NO_NODE_IN_POOL, (
        f"{field}={{{wanted}}}: no node has these labels ({len(nodes)} node(s) seen; "
        f"the nodes' values of {'; '.join(seen)}); name a pool the cluster has, "
        "or add nodes labelled so"
    )


def missing_pool(
    spec: BenchmarkRunSpec, nodes: Sequence[Mapping[str, Any]]
) -> tuple[str, str] | None:
    """The first of the run's pools that no node has (see `absent_pool`)."""
    for selector, field in run_selectors(spec):
        found = absent_pool(selector, field, nodes)
        if found is not None:
            return found
    return None
