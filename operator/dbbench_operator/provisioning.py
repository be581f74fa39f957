"""Provisioning: the run's own objects, then every target deployed and set up.

Each pass re-derives readiness from the cluster (StatefulSet status) and from
the databases themselves (replication / replica-set state), so nothing here
trusts what an earlier pass wrote in the status.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from dbbench_operator import kube, setting_up
from dbbench_operator.credentials import build_credentials_secret
from dbbench_operator.model import DEFAULT_VERSIONS, BenchmarkRunSpec, Target
from dbbench_operator.naming import RunRef, adopt, credentials_secret_name
from dbbench_operator.observations import TargetSeen, TargetsSeen
from dbbench_operator.planning import Step, build_plan_configmap
from dbbench_operator.topology import naming as topology_naming
from dbbench_operator.topology.rendering import RenderError, render
from dbbench_operator.topology.request import Hardware, Storage, TopologyRequest


def topology_request(run: RunRef, spec: BenchmarkRunSpec, target: Target) -> TopologyRequest:
    """The topology package's input for one target (pure)."""
    hw = spec.hardware
    return TopologyRequest(
        run_name=run.name,
        run_uid=run.uid,
        namespace=run.namespace,
        target_name=target.name,
        engine=target.engine,
        topology=target.topology,
        version=target.version or DEFAULT_VERSIONS[target.engine],
        image=target.image,
        members=target.effective_members,
        shards=target.shards or 0,
        settings=dict(target.settings or {}),
        durability=target.durability,
        hardware=Hardware(
            node_selector=dict(hw.node_selector or {}),
            tolerations=tuple(
                t.model_dump(by_alias=True, exclude_none=True) for t in hw.tolerations or ()
            ),
            affinity=dict(hw.affinity or {}),
            resources=hw.resources.model_dump(by_alias=True, exclude_none=True)
            if hw.resources
            else {},
            storage=Storage(
                storage_class_name=hw.storage.storage_class_name, size=str(hw.storage.size)
            ),
        ),
        cleanup=spec.cleanup,
        credentials_secret=credentials_secret_name(run),
    )


# What this process has already applied, by (run uid, object group): a pass in
# steady state then only reads. A cache, never the truth: a restarted operator
# applies once more (idempotent), and a deleted StatefulSet is re-applied
# because its absence is seen on the next read.
_applied: dict[tuple[str, str], str] = {}


def _digest(*parts: object) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def _statefulsets(request: TopologyRequest) -> list[tuple[int, dict[str, Any] | None]]:
    """(wanted members, StatefulSet or None) for each replica set of the target."""
    return [
        (rs.members, kube.get("apps/v1", "StatefulSet", request.namespace, rs.statefulset))
        for rs in topology_naming.layout(request).replica_sets
    ]


def _deploy(run: RunRef, request: TopologyRequest) -> list[tuple[int, dict[str, Any] | None]]:
    """Render and apply the target's chart unless this exact request is in place."""
    key, digest = (run.uid, request.target_name), _digest(request.model_dump_json())
    found = _statefulsets(request)
    if _applied.get(key) == digest and all(sts is not None for _, sts in found):
        return found
    kube.apply_all(adopt(m, run) for m in render(request))
    _applied[key] = digest
    return _statefulsets(request)


def _ensure_run_objects(run: RunRef, steps: list[Step]) -> None:
    key, digest = (run.uid, "run"), _digest(steps)
    if _applied.get(key) == digest:
        return
    kube.create_if_absent(build_credentials_secret(run, secrets.token_urlsafe))
    kube.apply(build_plan_configmap(run, steps))
    _applied[key] = digest


def ensure_target(run: RunRef, spec: BenchmarkRunSpec, index: int) -> TargetSeen:
    """Deploy (idempotent apply) and set up one target; report how far it is."""
    target = spec.targets[index]
    if target.external is not None:
        return setting_up.verify_external(run, index, target, target.external.uri_secret_ref)
    request = topology_request(run, spec, target)
    endpoint = topology_naming.layout(request).endpoint
    try:
        statefulsets = _deploy(run, request)
    except RenderError as exc:
        reason = ("RenderFailed", f"target {target.name}: {exc}")
        return TargetSeen(target.name, False, *reason, endpoint=endpoint, failure=reason)
    wanted = sum(members for members, _ in statefulsets)
    ready = sum(
        int(((sts or {}).get("status") or {}).get("readyReplicas") or 0) for _, sts in statefulsets
    )
    if ready < wanted:
        message = f"{ready}/{wanted} database pods ready"
        return TargetSeen(target.name, False, "WaitingForMembers", message, endpoint)
    return setting_up.set_up(request, endpoint)


def provision(run: RunRef, spec: BenchmarkRunSpec, steps: list[Step]) -> TargetsSeen:
    _ensure_run_objects(run, steps)
    seen = [ensure_target(run, spec, i) for i in range(len(spec.targets))]
    failure = next((t.failure for t in seen if t.failure is not None), None)
    waiting = [t for t in seen if not t.ready]
    ready = len(seen) - len(waiting)
    if not waiting:
        return TargetsSeen(ready, "AllTargetsReady", "", failure, [t.status() for t in seen])
    first = waiting[0]
    return TargetsSeen(
        ready, first.reason, f"target {first.name}: {first.message}", failure,
        [t.status() for t in seen],
    )  # fmt: skip
