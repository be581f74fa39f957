"""Runner Jobs on the cluster: start one per step, follow it, notice a
database pod that restarted while it ran.

The step's ConfigMap and Job are found by name and used only when the run owns
them (`k8s/ownership`); the Job's pods are found by the Job's uid, not its name, so
the pods of an earlier run's Job of the same name never count."""

from __future__ import annotations

import json
from typing import Any

from dbbench_contract.api import BenchmarkRunSpec
from dbbench_operator.k8s import api, ownership, pod_diagnosis
from dbbench_operator.k8s.pod_stalls import Stall
from dbbench_operator.naming import RunRef
from dbbench_operator.specs.addresses import TargetAccess, topology_request
from dbbench_operator.specs.databases import target_names
from dbbench_operator.specs.member_spread import shared_node
from dbbench_operator.specs.plan import Step
from dbbench_operator.specs.runner_job import (
    DATABASE_PODS_ANNOTATION,
    JobSettings,
    build_runner_job,
    build_step_config,
    build_step_configmap,
    database_host,
    job_name,
)
from dbbench_operator.specs.table_state import TableState
from dbbench_operator.steps.outcome import JobState, job_state

JOB_UID_LABEL = "batch.kubernetes.io/controller-uid"


def database_pods(run: RunRef, spec: BenchmarkRunSpec, index: int) -> list[dict[str, Any]]:
    """The pods of one deployed target (none for external targets)."""
    target = spec.targets[index]
    if target.external is not None:
        return []
    request = topology_request(run, spec, target)
    labels = {"app.kubernetes.io/instance": target_names.base_name(request)}
    return api.list_objects("v1", "Pod", run.namespace, labels)


def _restarts(pod: dict[str, Any]) -> int:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return sum(int(s.get("restartCount") or 0) for s in statuses)


def pod_marks(pods: list[dict[str, Any]]) -> dict[str, list[object]]:
    """{pod name: [uid, restarts]}: what a restart during the step would change."""
    return {p["metadata"]["name"]: [p["metadata"]["uid"], _restarts(p)] for p in pods}


def find_job(run: RunRef, step: Step) -> dict[str, Any] | None:
    """The step's Job if the run has made it (an earlier run's of that name raises)."""
    return ownership.get("batch/v1", "Job", run, job_name(run, step))


def start(
    run: RunRef,
    spec: BenchmarkRunSpec,
    step: Step,
    access: TargetAccess,
    settings: JobSettings,
    *,
    table: TableState | None = None,
) -> None:
    """The step file, then the Job (created once: a running Job is never rewritten)."""
    index = next(i for i, t in enumerate(spec.targets) if t.name == step.target)
    pods = database_pods(run, spec, index)
    host = None if spec.targets[index].external is not None else database_host(pods)
    config = build_step_config(spec, step, access, table, host, job_deadline=settings.job_deadline)
    ownership.apply(build_step_configmap(run, step, config), run)
    marks = pod_marks(pods)
    job = build_runner_job(run, spec, step, access, settings, database_pods=marks)
    ownership.create(job, run)


def job_pods(run: RunRef, job: dict[str, Any]) -> list[dict[str, Any]]:
    """The step Job's runner pods."""
    uid = str((job.get("metadata") or {}).get("uid") or "")
    return api.list_objects("v1", "Pod", run.namespace, {JOB_UID_LABEL: uid})


def follow(
    run: RunRef, step: Step, job: dict[str, Any], pods: list[dict[str, Any]] | None = None
) -> tuple[JobState, tuple[Stall, ...]]:
    """Where the step's Job stands, and its pods that have not started (while it runs).
    `pods`: the Job's pods as this pass already read them (after the Job)."""
    pods = job_pods(run, job) if pods is None else pods
    if any((p.get("metadata") or {}).get("deletionTimestamp") for p in pods):
        # The pass read the Job before setting up and reading the target, then its pods.
        # The Job controller marks a Job failing (FailureTarget: DeadlineExceeded, ...)
        # before it deletes the pods: pods seen being deleted are judged against the
        # Job as it is now, or a Job past spec.timeout read a moment too early made
        # the run fail as RunnerDeleted (seen on the node under load).
        job = find_job(run, step) or job
    state = job_state(step, job, pods)
    if state.finished:
        return state, ()
    return state, pod_diagnosis.runner_stalls(run.namespace, job, pods)


def disturbance(
    run: RunRef,
    spec: BenchmarkRunSpec,
    step: Step,
    job: dict[str, Any],
    pods: list[dict[str, Any]] | None = None,
) -> tuple[str, str] | None:
    """A database pod that restarted or was replaced since the step's Job started;
    else members of a replicated target sharing a node (`specs/member_spread`).
    `pods`: the target's database pods as this pass already read them."""
    annotations = (job.get("metadata") or {}).get("annotations") or {}
    before: dict[str, list[Any]] = json.loads(annotations.get(DATABASE_PODS_ANNOTATION) or "{}")
    if not before:
        return None
    index = next(i for i, t in enumerate(spec.targets) if t.name == step.target)
    pods = database_pods(run, spec, index) if pods is None else pods
    now = pod_marks(pods)
    for name, (uid, restarts) in sorted(before.items()):
        current = now.get(name)
        if current is None or current[0] != uid or int(str(current[1])) > int(restarts):
            return (
                "DatabasePodRestarted",
                f"database pod {name} restarted or was replaced during step {step.index + 1} "
                f"({step.target}/{step.phase}/{step.repeat}); the errors it caused are counted "
                "in that step's results",
            )
    return shared_node(step.target, spec.targets[index].topology, pods)
