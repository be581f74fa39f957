"""Admission of a Pending run: refused at once when its pods fit no node of
their pool (`fitting`); with hardware.exclusive, it starts only when no other
run uses its node pool.

A run's node pool is the set of nodes matching the nodeSelector of any of its
deployed targets (a target's own `hardware.nodeSelector`, else the run's;
all nodes when empty). Two runs conflict when their pools share a node and
either is exclusive. A run holds its pool from the moment it is admitted
until it has ended and its databases are gone (or scaled to zero).

The decision and the admission happen under one lock, and admitted runs are
remembered until their status says so: kopf runs handlers in threads, and a
status patch lands after the handler returns. One operator replica serves
all runs (the chart runs kopf --standalone), so this process sees every
decision. Runs in namespaces the operator does not watch are not seen.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from dbbench_operator import fitting, kube
from dbbench_operator.model import API_VERSION, KIND, BenchmarkRunSpec, SpecError, parse_spec
from dbbench_operator.naming import RunRef
from dbbench_operator.settings import OperatorSettings

_lock = threading.Lock()
_admitted: dict[str, str] = {}  # uid -> "namespace/name"
_HOLDING = frozenset({"Provisioning", "Running", "Collecting"})


def _nodes(selector: Mapping[str, str] | None) -> list[dict[str, Any]]:
    return kube.list_objects("v1", "Node", None, dict(selector or {}))


def _pool(selector: Mapping[str, str] | None) -> frozenset[str]:
    return frozenset(n["metadata"]["name"] for n in _nodes(selector))


def _run_pool(spec: BenchmarkRunSpec) -> frozenset[str]:
    """Every node the run's databases may land on."""
    return frozenset().union(*(_pool(selector) for selector in fitting.node_pools(spec)))


def misfit(spec: BenchmarkRunSpec) -> tuple[str, str] | None:
    """(reason, message) naming the field whose request no node of its pool can hold."""
    checks: list[tuple[fitting.Demand, Mapping[str, str] | None, str]] = [
        (demand, demand.pool, demand.pool_field) for demand in fitting.database_demands(spec)
    ]
    runner = fitting.runner_demand(spec)
    if runner is not None:
        checks.append((runner, spec.runner.node_selector, "spec.runner.nodeSelector"))
    listed: dict[tuple[tuple[str, str], ...], list[dict[str, Any]]] = {}
    for demand, selector, field in checks:
        key = tuple(sorted((selector or {}).items()))
        if key not in listed:
            listed[key] = _nodes(selector)
        found = fitting.misfit(demand, listed[key], fitting.pool_name(selector, field))
        if found is not None:
            return found
    return None


def _runs(settings: OperatorSettings) -> list[dict[str, Any]]:
    if not settings.watch_namespaces:
        return kube.list_objects(API_VERSION, KIND, None)
    return [
        run for ns in settings.watch_namespaces for run in kube.list_objects(API_VERSION, KIND, ns)
    ]


def _holds(run: Mapping[str, Any]) -> bool:
    status = run.get("status") or {}
    phase = status.get("phase") or "Pending"
    if phase in _HOLDING or run["metadata"]["uid"] in _admitted:
        return True
    # Ended, but its databases may still be on the nodes until cleanup is done.
    return phase in ("Succeeded", "Failed") and not status.get("cleanedUp")


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
        others = [r for r in _runs(settings) if r["metadata"]["uid"] != run.uid]
        live = {r["metadata"]["uid"] for r in others} | {run.uid}
        for uid in [u for u in _admitted if u not in live]:
            del _admitted[uid]  # deleted runs hold nothing
        mine: frozenset[str] | None = None
        for other in others:
            other_spec = _spec(other)
            if other_spec is None or not _holds(other):
                continue
            if not (spec.hardware.exclusive or other_spec.hardware.exclusive):
                continue
            mine = _run_pool(spec) if mine is None else mine
            shared = mine & _run_pool(other_spec)
            if shared:
                meta = other["metadata"]
                holder = "exclusively " if other_spec.hardware.exclusive else ""
                return (
                    "WaitingForNodes",
                    f"node(s) {', '.join(sorted(shared)[:5])} {holder}in use by BenchmarkRun "
                    f"{meta['namespace']}/{meta['name']}; this run starts when that one ends "
                    "(or set hardware.exclusive: false on both to share)",
                )
        _admitted[run.uid] = f"{run.namespace}/{run.name}"
        return None


def release(run: RunRef) -> None:
    """The run ended and its databases are gone: it holds nothing any more."""
    with _lock:
        _admitted.pop(run.uid, None)
