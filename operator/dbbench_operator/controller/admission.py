"""Admission of a Pending run: refused at once when it names a pool no node has
(`specs/pool_nodes`) or its pods fit no node of their pool (`specs/node_fit`);
with hardware.exclusive, it starts only when no other run uses its node pool.

A run's node pool is the set of nodes matching the nodeSelector of any of its
deployed targets (a target's own `hardware.nodeSelector`, else the run's;
all nodes when empty). Two runs conflict when their pools share a node and
either is exclusive. A run holds its pool from the moment it is admitted
until it has ended and its databases are gone (or scaled to zero).

Runs and nodes are read from memory (`controller/inventory`: what the watches show,
listed once per resync interval as a safety net), not listed on each pass.
The decision and the admission happen under one lock, and admitted runs are
remembered until their status says so: kopf runs handlers in threads, and a
status patch lands after the handler returns. One operator replica serves
all runs (the chart runs kopf --standalone), so this process sees every
decision. Runs in namespaces the operator does not watch are not seen.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

from dbbench_contract.api import API_VERSION, KIND, BenchmarkRunSpec, SpecError, parse_spec
from dbbench_operator.controller.inventory import INVENTORY, NodeEntry, RunEntry
from dbbench_operator.k8s import api
from dbbench_operator.naming import RunRef
from dbbench_operator.settings import OperatorSettings
from dbbench_operator.specs import node_fit, pool_nodes
from dbbench_operator.status.recording import read_status

_lock = threading.Lock()
_admitted: dict[str, str] = {}  # uid -> "namespace/name"
_HOLDING = frozenset({"Provisioning", "Running", "Collecting"})


# -- what the watches show (kopf's event loop) --------------------------------------


def run_entry(obj: Mapping[str, Any], known: RunEntry | None = None) -> RunEntry:
    """What admission needs of a run object; its spec is parsed again only when its
    generation moved on from the `known` entry's (a status patch leaves it)."""
    meta, status = obj.get("metadata") or {}, read_status(obj.get("status") or {})
    generation = int(meta.get("generation") or 0)
    phase, cleaned_up = status.phase or "Pending", bool(status.cleaned_up)
    if known is not None and known.generation == generation:
        return replace(known, phase=phase, cleaned_up=cleaned_up)
    spec = _spec(obj)
    return RunEntry(
        uid=str(meta.get("uid") or ""), namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""), generation=generation, phase=phase,
        cleaned_up=cleaned_up, exclusive=bool(spec is not None and spec.hardware.exclusive),
        pools=None if spec is None else tuple(node_fit.node_pools(spec)),
    )  # fmt: skip


def node_entry(obj: Mapping[str, Any]) -> NodeEntry:
    meta, status = obj.get("metadata") or {}, obj.get("status") or {}
    return NodeEntry(
        name=str(meta.get("name") or ""),
        labels={str(k): str(v) for k, v in (meta.get("labels") or {}).items()},
        allocatable={str(k): str(v) for k, v in (status.get("allocatable") or {}).items()},
    )


def run_seen(obj: Mapping[str, Any], *, deleted: bool) -> None:
    known = INVENTORY.run(str((obj.get("metadata") or {}).get("uid") or ""))
    INVENTORY.run_seen(run_entry(obj, known), deleted=deleted)


def node_seen(obj: Mapping[str, Any], *, deleted: bool) -> bool:
    """True when a node's labels or capacity changed (waiting runs look again)."""
    return INVENTORY.node_seen(node_entry(obj), deleted=deleted)


# -- what a pass reads (worker threads) -------------------------------------------


def _all_nodes(settings: OperatorSettings) -> list[NodeEntry]:
    nodes = INVENTORY.nodes(settings.resync_interval)
    if nodes is None:
        nodes = [node_entry(n) for n in api.iter_objects("v1", "Node", None)]
        INVENTORY.fill_nodes(nodes)
    return nodes


def _nodes(selector: Mapping[str, str] | None, settings: OperatorSettings) -> list[dict[str, Any]]:
    return [n.as_object() for n in _all_nodes(settings) if n.matches(selector)]


def _pool(selector: Mapping[str, str] | None, settings: OperatorSettings) -> frozenset[str]:
    return frozenset(n.name for n in _all_nodes(settings) if n.matches(selector))


def _run_pool(pools: tuple[Mapping[str, str], ...], settings: OperatorSettings) -> frozenset[str]:
    """Every node the run's databases may land on."""
    return frozenset().union(*(_pool(selector, settings) for selector in pools))


def misfit(spec: BenchmarkRunSpec, settings: OperatorSettings) -> tuple[str, str] | None:
    """(reason, message) naming the field whose pool no node has (`specs/pool_nodes`),
    or whose request no node of its pool can hold."""
    absent = pool_nodes.missing_pool(spec, [n.as_object() for n in _all_nodes(settings)])
    if absent is not None:
        return absent
    checks: list[tuple[node_fit.Demand, Mapping[str, str] | None, str]] = [
        (demand, demand.pool, demand.pool_field) for demand in node_fit.database_demands(spec)
    ]
    runner = node_fit.runner_demand(spec)
    if runner is not None:
        checks.append((runner, spec.runner.node_selector, "spec.runner.nodeSelector"))
    listed: dict[tuple[tuple[str, str], ...], list[dict[str, Any]]] = {}
    for demand, selector, field in checks:
        key = tuple(sorted((selector or {}).items()))
        if key not in listed:
            listed[key] = _nodes(selector, settings)
        found = node_fit.misfit(demand, listed[key], node_fit.pool_name(selector, field))
        if found is not None:
            return found
    return None


def _list_runs(settings: OperatorSettings) -> Iterator[dict[str, Any]]:
    """Every run, a page at a time (their entries are kept, not their bodies)."""
    if not settings.watch_namespaces:
        yield from api.iter_objects(API_VERSION, KIND, None)
        return
    for ns in settings.watch_namespaces:
        yield from api.iter_objects(API_VERSION, KIND, ns)


def _runs(settings: OperatorSettings) -> list[RunEntry]:
    runs = INVENTORY.runs(settings.resync_interval)
    if runs is None:
        runs = [run_entry(r) for r in _list_runs(settings)]
        INVENTORY.fill_runs(runs)
    return runs


def _holds(run: RunEntry) -> bool:
    if run.phase in _HOLDING or run.uid in _admitted:
        return True
    # Ended, but its databases may still be on the nodes until cleanup is done.
    return run.phase in ("Succeeded", "Failed") and not run.cleaned_up


def _spec(run: Mapping[str, Any]) -> BenchmarkRunSpec | None:
    try:
        return parse_spec(run.get("spec") or {})
    except SpecError:
        return None  # an invalid run fails without ever deploying anything


def blocker(
    run: RunRef, spec: BenchmarkRunSpec, settings: OperatorSettings
) -> tuple[str, str] | None:
    """(reason, message) naming the run that holds the pool, or None once admitted."""
    with _lock:
        others = [r for r in _runs(settings) if r.uid != run.uid]
        live = {r.uid for r in others} | {run.uid}
        for uid in [u for u in _admitted if u not in live]:
            del _admitted[uid]  # deleted runs hold nothing
        mine: frozenset[str] | None = None
        for other in others:
            if other.pools is None or not _holds(other):
                continue
            if not (spec.hardware.exclusive or other.exclusive):
                continue
            if mine is None:
                mine = _run_pool(tuple(node_fit.node_pools(spec)), settings)
            shared = mine & _run_pool(other.pools, settings)
            if shared:
                holder = "exclusively " if other.exclusive else ""
                return (
                    "WaitingForNodes",
                    f"node(s) {', '.join(sorted(shared)[:5])} {holder}in use by BenchmarkRun "
                    f"{other.namespace}/{other.name}; this run starts when that one ends "
                    "(or set hardware.exclusive: false on both to share)",
                )
        _admitted[run.uid] = f"{run.namespace}/{run.name}"
        return None


def release(run: RunRef) -> None:
    """The run ended and its databases are gone: it holds nothing any more."""
    with _lock:
        _admitted.pop(run.uid, None)
