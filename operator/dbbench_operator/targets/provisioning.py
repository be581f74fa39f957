"""Provisioning: the run's own objects, then one target deployed and set up.

Each pass re-derives readiness from the cluster (StatefulSet status) and from
the databases themselves (replication / replica-set state), so nothing here
trusts what an earlier pass wrote in the status. Objects found by name are
used only when the run owns them (`k8s/ownership`): a re-created run never takes
over its predecessor's Secret (and its results token).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import replace
from typing import Any

from dbbench_contract.api import BenchmarkRunSpec
from dbbench_operator.k8s import api, ownership, pod_diagnosis
from dbbench_operator.k8s.pod_stalls import longest
from dbbench_operator.naming import RunRef, adopt, credentials_secret_name
from dbbench_operator.settings import OperatorSettings
from dbbench_operator.specs.addresses import topology_request
from dbbench_operator.specs.credentials import RESULTS_TOKEN_KEY, build_credentials_secret
from dbbench_operator.specs.databases import target_names
from dbbench_operator.specs.databases.rendering import RenderError, render
from dbbench_operator.specs.databases.request import TopologyRequest
from dbbench_operator.specs.network_policies import build_database_policy
from dbbench_operator.specs.plan import Step, build_plan_configmap
from dbbench_operator.status.observations import TargetSeen
from dbbench_operator.targets import setup

# What this process has already applied, by (run uid, object group): a pass in
# steady state then only reads. A cache, never the truth: a restarted operator
# applies once more (idempotent), and a deleted StatefulSet is re-applied
# because its absence is seen on the next read.
_applied: dict[tuple[str, str], str] = {}


def forget(uid: str) -> None:
    """Drop what the cache holds for a run whose loop ended (deleted, or ended and
    cleaned up): an operator that lives for months must not keep every run's."""
    for key in [k for k in list(_applied) if k[0] == uid]:
        _applied.pop(key, None)


def _digest(*parts: object) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def _statefulsets(run: RunRef, request: TopologyRequest) -> list[tuple[int, dict[str, Any] | None]]:
    """(wanted members, StatefulSet or None) for each replica set of the target."""
    return [
        (rs.members, ownership.get("apps/v1", "StatefulSet", run, rs.statefulset))
        for rs in target_names.layout(request).replica_sets
    ]


def _manifests(run: RunRef, request: TopologyRequest) -> list[dict[str, Any]]:
    """The target's chart, rendered, and its NetworkPolicy when the chart asks for them."""
    manifests = list(render(request))
    settings = OperatorSettings.from_env()
    if settings.network_policies:
        # Before the databases, so no member ever listens unfenced.
        manifests.insert(0, build_database_policy(run, request, settings.operator_peer()))
    return [adopt(m, run) for m in manifests]


def _deploy(run: RunRef, request: TopologyRequest) -> list[tuple[int, dict[str, Any] | None]]:
    """Render and apply the target's chart unless this exact request is in place."""
    key, digest = (run.uid, request.target_name), _digest(request.model_dump_json())
    found = _statefulsets(run, request)
    if _applied.get(key) == digest and all(sts is not None for _, sts in found):
        return found
    api.apply_all(_manifests(run, request))
    _applied[key] = digest
    return _statefulsets(run, request)


def ensure_run_objects(run: RunRef, steps: list[Step], results_token: str) -> None:
    """The run's credentials Secret (created once, never rewritten) and plan ConfigMap."""
    key, digest = (run.uid, "run"), _digest(steps)
    if _applied.get(key) == digest:
        return
    secret = build_credentials_secret(run, secrets.token_urlsafe, results_token)
    if not ownership.create(secret, run):
        # The run's own Secret, made by an older operator without the token: add it.
        api.ensure_secret_key(
            run.namespace, credentials_secret_name(run), RESULTS_TOKEN_KEY, results_token
        )
    ownership.apply(build_plan_configmap(run, steps), run)
    _applied[key] = digest


def ensure_target(
    run: RunRef, spec: BenchmarkRunSpec, index: int, *, set_up: bool = True
) -> TargetSeen:
    """Deploy (idempotent apply) and set up one target; report how far it is.

    `set_up=False` while a step's runner Job exists: readiness is read from the
    StatefulSets only, because connecting to every member every few seconds
    (setup checks, external probes) would add load to what is being measured.
    """
    target = spec.targets[index]
    if target.external is not None:
        if not set_up:
            return TargetSeen(
                target.name, True, "Ready", "external target (checked before the step)"
            )
        return _settling(setup.verify_external(run, index, target, target.external.uri_secret_ref))
    request = topology_request(run, spec, target)
    endpoint = target_names.layout(request).endpoint
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
        return _waiting(request, statefulsets, f"{ready}/{wanted} database pods ready", endpoint)
    if not set_up:
        return TargetSeen(target.name, True, "Ready", f"{ready}/{wanted} database pods ready",
                          endpoint)  # fmt: skip
    return _settling(setup.set_up(request, endpoint))


def _settling(seen: TargetSeen) -> TargetSeen:
    """Not usable although its pods are ready (or it is external): bounded by
    spec.startupGrace (`steps/advancing`), unless it already failed outright."""
    if seen.ready or seen.failure is not None:
        return seen
    return replace(seen, settling=True)


def _waiting(
    request: TopologyRequest,
    statefulsets: list[tuple[int, dict[str, Any] | None]],
    counted: str,
    endpoint: str,
) -> TargetSeen:
    """Not all members are ready: the pods' own reason (Unschedulable, ErrImagePull,
    CrashLoopBackOff, ...), or WaitingForMembers when no pod says anything is wrong
    (the next member is created once the previous one is ready)."""
    labels = {"app.kubernetes.io/instance": target_names.base_name(request)}
    stalls = pod_diagnosis.database_stalls(request.namespace, labels, statefulsets)
    if not stalls:
        return TargetSeen(request.target_name, False, "WaitingForMembers", counted, endpoint)
    stall = longest(stalls)
    message = f"{counted}; {stall.describe()}"
    return TargetSeen(request.target_name, False, stall.reason, message, endpoint, stalls=stalls)
