"""Removing what a run deployed: a target once its steps are done (before the
next one starts, so two targets never share the hardware), and the runner
Jobs when a run ends early."""

from __future__ import annotations

from dbbench_operator import kube
from dbbench_operator.addressing import topology_request
from dbbench_operator.model import BenchmarkRunSpec
from dbbench_operator.naming import RunRef
from dbbench_operator.topology import naming as topology_naming

# What the topology charts render that runs pods or serves them.
_WORKLOADS = (("apps/v1", "StatefulSet"), ("apps/v1", "Deployment"))
_SERVICES = (("v1", "Service"),)


def retire_target(run: RunRef, spec: BenchmarkRunSpec, index: int) -> int:
    """Delete the target (cleanup: Delete) or scale it to zero (Retain, data kept).

    Idempotent; returns how many of its pods still exist (wait until 0).
    """
    target = spec.targets[index]
    if target.external is not None:
        return 0
    labels = {"app.kubernetes.io/instance": topology_naming.base_name(
        topology_request(run, spec, target))}  # fmt: skip
    for api_version, kind in _WORKLOADS:
        for obj in kube.list_objects(api_version, kind, run.namespace, labels):
            name = obj["metadata"]["name"]
            if spec.cleanup == "Delete":
                kube.delete(api_version, kind, run.namespace, name)
            elif (obj.get("spec") or {}).get("replicas") != 0:
                kube.patch_merge(api_version, kind, run.namespace, name, {"spec": {"replicas": 0}})
    if spec.cleanup == "Delete":
        for api_version, kind in _SERVICES:
            for obj in kube.list_objects(api_version, kind, run.namespace, labels):
                kube.delete(api_version, kind, run.namespace, obj["metadata"]["name"])
    return len(kube.list_objects("v1", "Pod", run.namespace, labels))


def retire_targets(run: RunRef, spec: BenchmarkRunSpec, before: int) -> int:
    """Retire every target before `before`; pods of theirs still terminating."""
    return sum(retire_target(run, spec, i) for i in range(before))


def stop_jobs(run: RunRef) -> int:
    """Delete the run's runner and cache-drop Jobs (their pods go with them)."""
    jobs = kube.list_objects("batch/v1", "Job", run.namespace, {"dbbench.io/run": run.name[:63]})
    for job in jobs:
        kube.delete("batch/v1", "Job", run.namespace, job["metadata"]["name"])
    return len(jobs)


def end_run(run: RunRef, spec: BenchmarkRunSpec, *, failed: bool) -> None:
    """At the end: stop any load still running, retire every target."""
    if failed:
        stop_jobs(run)
    retire_targets(run, spec, len(spec.targets))
