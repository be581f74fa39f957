"""Removing what a run deployed: a target once its steps are done (before the
next one starts, so two targets never share the hardware), the runner Jobs
when a run ends early, the cache-drop Jobs in the operator's namespace
(which no owner reference can reach) when a run ends or is deleted, and
everything of the run's in its namespace when it is deleted (`remove_children`).

Everything is selected by the run's uid label or the target's uid-hashed
instance label: never by name, so a run never touches another run's objects,
not even those of an earlier run of the same name."""

from __future__ import annotations

from typing import Any

from dbbench_contract.api import BenchmarkRunSpec
from dbbench_operator.k8s import api, ownership
from dbbench_operator.naming import RUN_LABEL, RunRef, label_value, run_selector
from dbbench_operator.settings import OperatorSettings
from dbbench_operator.specs.addresses import topology_request
from dbbench_operator.specs.databases import target_names

# What the topology charts render that runs pods or serves them.
_WORKLOADS = (("apps/v1", "StatefulSet"), ("apps/v1", "Deployment"))
_SERVICES = (("v1", "Service"),)
_POLICIES = (("networking.k8s.io/v1", "NetworkPolicy"),)

# Everything a run leaves in its namespace, each object labelled with the run's
# uid: what the operator makes (from its builders and the topology charts), and
# what the controllers make from those, which copy the labels (pods and
# ControllerRevisions from the pod templates, PersistentVolumeClaims from the
# volumeClaimTemplates, ReplicaSets from the mongos Deployment's template,
# EndpointSlices from their Service). Owners come before what they make, so that
# no controller makes again what was just deleted: the StatefulSets, Deployments
# and Jobs first, then the mongos ReplicaSets, then the pods and the rest; the
# NetworkPolicies last, so a database stays fenced while it stops.
_ORDER = (
    *_WORKLOADS, ("batch/v1", "Job"),
    ("apps/v1", "ReplicaSet"),
    ("v1", "Pod"), ("v1", "PersistentVolumeClaim"), ("apps/v1", "ControllerRevision"),
    *_SERVICES, ("discovery.k8s.io/v1", "EndpointSlice"),
    ("v1", "ConfigMap"), ("v1", "Secret"),
    *_POLICIES,
)  # fmt: skip
# Which kinds a run has, by what its spec deploys (immutable once it started, and
# nothing is deployed before): one request per kind, each a scan of that kind in
# the namespace by the API server, so a run against an external target (most runs
# in `make scale`) costs 4 requests rather than 12.
# Every run: runner Jobs and their pods, plan and step ConfigMaps, credentials.
_EVERY_RUN = frozenset({"Job", "Pod", "ConfigMap", "Secret"})
# A target the operator deploys (not an external one).
_DEPLOYED = frozenset({"StatefulSet", "PersistentVolumeClaim", "ControllerRevision", "Service",
                       "EndpointSlice", "NetworkPolicy"})  # fmt: skip
# A sharded MongoDB target's mongos routers.
_MONGOS = frozenset({"Deployment", "ReplicaSet"})


def run_children(spec: BenchmarkRunSpec | None, *, policies: bool) -> tuple[tuple[str, str], ...]:
    """(apiVersion, kind) of everything the run may have left in its namespace, in
    the order to delete them; every kind when its spec no longer parses. `policies`:
    the operator makes NetworkPolicies (chart value networkPolicy.enabled, and only
    then may it delete them)."""
    kinds = {kind for _, kind in _ORDER}
    if spec is not None:
        deployed = [t for t in spec.targets if t.external is None]
        kinds = set(_EVERY_RUN)
        if deployed:
            kinds |= _DEPLOYED
        if any(t.topology == "sharded" for t in deployed):
            kinds |= _MONGOS
    if not policies:
        kinds.discard("NetworkPolicy")
    return tuple((api_version, kind) for api_version, kind in _ORDER if kind in kinds)


def retire_target(
    run: RunRef, spec: BenchmarkRunSpec, index: int, *, policies: bool = False
) -> int:
    """Delete the target (cleanup: Delete) or scale it to zero (Retain, data kept).

    `policies`: the operator makes NetworkPolicies (chart value networkPolicy.enabled);
    they go with the target's Services, and stay around a Retained target.
    Idempotent; returns how many of its pods still exist (wait until 0).
    """
    target = spec.targets[index]
    if target.external is not None:
        return 0
    labels = {"app.kubernetes.io/instance": target_names.base_name(
        topology_request(run, spec, target))}  # fmt: skip
    for api_version, kind in _WORKLOADS:
        for obj in api.list_objects(api_version, kind, run.namespace, labels):
            name = obj["metadata"]["name"]
            if spec.cleanup == "Delete":
                api.delete(api_version, kind, run.namespace, name)
            elif (obj.get("spec") or {}).get("replicas") != 0:
                api.patch_merge(api_version, kind, run.namespace, name, {"spec": {"replicas": 0}})
    if spec.cleanup == "Delete":
        for api_version, kind in _SERVICES + (_POLICIES if policies else ()):
            for obj in api.list_objects(api_version, kind, run.namespace, labels):
                api.delete(api_version, kind, run.namespace, obj["metadata"]["name"])
    return len(api.list_objects("v1", "Pod", run.namespace, labels))


def retire_targets(
    run: RunRef, spec: BenchmarkRunSpec, before: int, *, policies: bool = False
) -> int:
    """Retire every target before `before`; pods of theirs still terminating."""
    return sum(retire_target(run, spec, i, policies=policies) for i in range(before))


def _runner_jobs(run: RunRef) -> list[dict[str, Any]]:
    """The run's Jobs: by its uid label, and (Jobs an operator before that label made)
    by its name label, kept only when the run owns them."""
    jobs = {j["metadata"]["name"]: j for j in
            api.list_objects("batch/v1", "Job", run.namespace, run_selector(run))}  # fmt: skip
    for job in api.list_objects(
        "batch/v1", "Job", run.namespace, {RUN_LABEL: label_value(run.name)}
    ):
        if ownership.owned_by(job, run):
            jobs.setdefault(job["metadata"]["name"], job)
    return list(jobs.values())


def stop_jobs(run: RunRef) -> int:
    """Delete the run's runner Jobs (their pods go with them); never another run's."""
    jobs = _runner_jobs(run)
    for job in jobs:
        api.delete("batch/v1", "Job", run.namespace, job["metadata"]["name"])
    return len(jobs)


def remove_cache_drops(run: RunRef, spec: BenchmarkRunSpec, settings: OperatorSettings) -> int:
    """Delete the run's cache-drop Jobs in the operator's namespace (cache: cold and
    coldOnce only)."""
    if not spec.restarts_databases or not settings.allow_cache_drop:
        return 0
    jobs = api.list_objects("batch/v1", "Job", settings.namespace, run_selector(run))
    for job in jobs:
        api.delete("batch/v1", "Job", settings.namespace, job["metadata"]["name"])
    return len(jobs)


def end_run(
    run: RunRef, spec: BenchmarkRunSpec, settings: OperatorSettings, *, failed: bool
) -> None:
    """At the end: stop any load still running, retire every target, remove the
    cache-drop Jobs."""
    if failed:
        stop_jobs(run)
    remove_cache_drops(run, spec, settings)
    retire_targets(run, spec, len(spec.targets), policies=settings.network_policies)


def remove_children(run: RunRef, spec: BenchmarkRunSpec | None, settings: OperatorSettings) -> None:
    """Delete everything of the run's in its namespace, one request per kind by its
    uid label, rather than leaving it to the garbage collector once the run is gone:
    the collector deletes one object at a time at its client's pace (about 20 a
    second), so a thousand runs' children took minutes, their pods holding nodes
    that waiting runs need. Never another run's: the label is this run's uid."""
    for api_version, kind in run_children(spec, policies=settings.network_policies):
        api.delete_collection(api_version, kind, run.namespace, run_selector(run))
