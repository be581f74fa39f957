"""Runner Jobs and their step files (pure builders).

One Indexed Job per step: `runner.pods` completions run in parallel, each pod
gets its index from Kubernetes and the same step file from a ConfigMap.
Runner pods never mount the results claim: they hand their files to the
results service with the run's token (from the run's Secret). A runner pod is
never retried (`steps/outcome`: the step fails instead).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeVar

from dbbench_contract import layout
from dbbench_contract import step as step_file
from dbbench_contract.api import BenchmarkRunSpec, Target
from dbbench_contract.api.sources import SOURCE_MOUNT, DataSource
from dbbench_contract.api.units import parse_quantity
from dbbench_operator.naming import (
    RunRef,
    adopt,
    child_name,
    credentials_secret_name,
    label_value,
    run_labels,
)
from dbbench_operator.specs.addresses import TargetAccess
from dbbench_operator.specs.credentials import RESULTS_TOKEN_KEY
from dbbench_operator.specs.databases.client_router import with_router
from dbbench_operator.specs.databases.request import SECRET_PASSWORD_KEY
from dbbench_operator.specs.plan import Step
from dbbench_operator.specs.table_state import TableState
from dbbench_operator.specs.tokens import results_prefix

STEP_DIR = "/etc/dbbench/step"
CREDENTIALS_DIR = "/var/run/dbbench/credentials"
TARGET_URI_DIR = "/var/run/dbbench/target"
RUNNER_UID = 65532
MIN_DEADLINE_S = 60
DATABASE_PODS_ANNOTATION = "dbbench.io/database-pods"


@dataclass(frozen=True)
class JobSettings:
    image: str
    pull_policy: str
    results_url: str
    deadline_seconds: int  # what is left of spec.timeout: no Job outlives its run
    created_at: datetime | None = None  # when the Job is made (the pass's clock)
    # The runner's /metrics (0: none) and how long it is served after the phase,
    # so that a scrape sees the final figures (docs/metrics.md).
    metrics_port: int = 0
    metrics_linger: float = 0.0

    @property
    def active_deadline_seconds(self) -> int:
        return max(MIN_DEADLINE_S, self.deadline_seconds)

    @property
    def job_deadline(self) -> datetime | None:
        """When Kubernetes ends the Job: runner pods retry uploads until then."""
        if self.created_at is None:
            return None
        return self.created_at + timedelta(seconds=self.active_deadline_seconds)


def step_dir(step: Step) -> str:
    """``<target>/<phase>/<repeat>``: the step's place in the run's results."""
    return layout.step_dir(step.target, step.phase, step.repeat)


# An Indexed Job's pods get the hostname `<job>-<index>`, a DNS label: the API
# server refuses a Job whose name leaves no room for `-63` (runner.pods <= 64).
JOB_NAME_MAX = 63 - len("-63")


def job_name(run: RunRef, step: Step) -> str:
    return child_name(run, f"step-{step.index + 1}", JOB_NAME_MAX)


def step_labels(run: RunRef, step: Step, component: str) -> dict[str, str]:
    return {
        **run_labels(run, component),
        "dbbench.io/step": str(step.index + 1),
        "dbbench.io/target": label_value(step.target),
    }


def build_target(target: Target, access: TargetAccess) -> step_file.Target:
    if access.uri_secret is not None:
        return step_file.Target(
            name=target.name, engine=target.engine, durability=target.durability,
            connect_retries=6, uri_file=Path(TARGET_URI_DIR, "uri"),
        )  # fmt: skip
    return step_file.Target(
        name=target.name,
        engine=target.engine,
        durability=target.durability,
        connect_retries=6,
        uri=access.uri,
        host=None if access.uri is not None else access.host,
        port=None if access.uri is not None else access.port,
        replicas=()
        if access.uri is not None
        else tuple(step_file.Endpoint(host=h, port=p) for h, p in access.replicas),
        shard_key=access.shard_key,
        user=access.user,
        password_file=Path(CREDENTIALS_DIR, SECRET_PASSWORD_KEY),
    )


def build_step_config(
    spec: BenchmarkRunSpec,
    step: Step,
    access: TargetAccess,
    table: TableState | None = None,
    host: step_file.DatabaseHost | None = None,
    *,
    job_deadline: datetime | None = None,
) -> step_file.StepConfig:
    """The step file every pod of the step's Job reads (pod index from the Job).

    `table`: what the target's earlier steps wrote (where new record numbers
    start, how many records are there before the step); None for a first step.
    The records the step loads, or reads draw keys from, are the plan's (`Step`).
    `host`: where the database pods run and their limits (None: external).
    `job_deadline`: when the step's Job ends (`JobSettings.job_deadline`).
    """
    target = next(t for t in spec.targets if t.name == step.target)
    phase = next(p for p in spec.phases if p.name == step.phase)
    placed = (table or TableState.first(step)).step_fields(step)
    return step_file.StepConfig(
        target=build_target(target, access),
        # The run's data set and phase as the spec has them (the API's models),
        # `records` the step's: what it loads, or what its reads draw keys from
        # (everything loaded so far); the runner resolves the rest (write
        # concern, keys) by the same rules.
        dataset=step_file.StepDataset(
            **{**dict(spec.dataset), "records": placed["records"]},
            records_before=placed["recordsBefore"],
            first_record=placed["firstRecord"],
        ),
        phase=phase,
        pod=step_file.Pod(count=spec.runner.pods),
        step=step.index + 1,
        # Seed the step's operation streams and stamp its writes: no repeat or
        # phase replays another's operations or values; targets share them.
        phase_index=spec.phases.index(phase),
        repeat=step.repeat,
        database_host=host,
        threads=phase.threads or spec.runner.threads,
        # Unset: the runner decides (processes from the pod's CPU budget, mysqlclient).
        processes=spec.runner.processes,
        mysql_driver=spec.runner.mysql_driver or "mysqlclient",
        # MongoDB has no statements: a mixed run's prepared applies to its SQL targets.
        statements=None if target.engine == "mongodb" else spec.runner.statements,
        progress_every=2,
        job_deadline=job_deadline,
    )


def _limit(pod: Mapping[str, Any], resource: str) -> Decimal | None:
    """The database container's limit (the pod's first container: the engine)."""
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    value = ((containers[0].get("resources") or {}).get("limits") or {}).get(resource)
    return None if value is None else parse_quantity(value)


_Limit = TypeVar("_Limit", int, float)


def _agreed(values: Sequence[_Limit | None]) -> _Limit | None:
    """The one value every pod shares; None when none is known or they differ."""
    distinct = set(values)
    return distinct.pop() if len(distinct) == 1 else None


def database_host(pods: Sequence[Mapping[str, Any]]) -> step_file.DatabaseHost:
    """Where the target's database pods run (their nodes, as scheduled when the step
    starts), each with its role and limits as the pod carries them, for environment.json.
    The target's limits are those of the pods that hold the data: a sharded target's
    config servers and routers have their own, smaller ones and are listed as such,
    never taken for the servers the data-to-memory ratio is about."""
    ordered = sorted(pods, key=lambda p: str(p["metadata"]["name"]))
    listed = tuple(
        step_file.DatabasePod(
            name=str(p["metadata"]["name"]),
            node=(p.get("spec") or {}).get("nodeName"),
            role=((p.get("metadata") or {}).get("labels") or {}).get("app.kubernetes.io/component"),
            memory_limit_bytes=None if (memory := _limit(p, "memory")) is None else int(memory),
            cpu_limit=None if (cpu := _limit(p, "cpu")) is None else float(cpu),
        )
        for p in ordered
    )
    data = [p for p in listed if p.holds_data]
    return step_file.DatabaseHost(
        pods=listed,
        memory_limit_bytes=_agreed([p.memory_limit_bytes for p in data]),
        cpu_limit=_agreed([p.cpu_limit for p in data]),
    )


def build_step_configmap(run: RunRef, step: Step, config: step_file.StepConfig) -> dict[str, Any]:
    manifest = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": job_name(run, step), "labels": step_labels(run, step, "runner")},
        "data": {"step.yaml": json.dumps(config.to_wire(), indent=1)},
    }
    return adopt(manifest, run)


def _volumes(run: RunRef, step: Step, access: TargetAccess) -> list[dict[str, Any]]:
    volumes: list[dict[str, Any]] = [
        {"name": "step", "configMap": {"name": job_name(run, step)}},
        {"name": "work", "emptyDir": {}},
        {"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}},
    ]
    if access.password_secret is not None:
        volumes.append({"name": "credentials", "secret": {
            "secretName": access.password_secret,
            "items": [{"key": SECRET_PASSWORD_KEY, "path": SECRET_PASSWORD_KEY}],
            "defaultMode": 0o400,
        }})  # fmt: skip
    if access.uri_secret is not None:
        volumes.append({"name": "target-uri", "secret": {
            "secretName": access.uri_secret.name,
            "items": [{"key": access.uri_secret.key, "path": "uri"}],
            "defaultMode": 0o400,
        }})  # fmt: skip
    return volumes


def _mounts(access: TargetAccess) -> list[dict[str, Any]]:
    mounts: list[dict[str, Any]] = [
        {"name": "step", "mountPath": STEP_DIR, "readOnly": True},
        {"name": "work", "mountPath": "/work"},
        {"name": "tmp", "mountPath": "/tmp"},  # noqa: S108 - an emptyDir of the pod's own
    ]
    if access.password_secret is not None:
        mounts.append({"name": "credentials", "mountPath": CREDENTIALS_DIR, "readOnly": True})
    if access.uri_secret is not None:
        mounts.append({"name": "target-uri", "mountPath": TARGET_URI_DIR, "readOnly": True})
    return mounts


def _env(run: RunRef, step: Step, settings: JobSettings) -> list[dict[str, Any]]:
    return [
        {"name": "DBBENCH_RESULTS_URL", "value": settings.results_url},
        {"name": "DBBENCH_RUN", "value": results_prefix(run)},
        {"name": "DBBENCH_STEP", "value": step_dir(step)},
        {"name": "DBBENCH_RESULTS_TOKEN", "valueFrom": {"secretKeyRef": {
            "name": credentials_secret_name(run), "key": RESULTS_TOKEN_KEY}}},
        {"name": "DBBENCH_RUNNER_IMAGE", "value": settings.image},
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        *_metrics_env(settings),
    ]  # fmt: skip


def _metrics_env(settings: JobSettings) -> list[dict[str, Any]]:
    """The runner's /metrics, in its environment rather than its arguments: a run
    keeps the runner image it started with, and an older runner ignores variables
    it does not know where it would refuse an unknown flag."""
    if not settings.metrics_port:
        return []
    return [
        {"name": "DBBENCH_RUNNER_METRICS_PORT", "value": str(settings.metrics_port)},
        {"name": "DBBENCH_RUNNER_METRICS_LINGER", "value": f"{settings.metrics_linger:g}"},
    ]


def _ports(settings: JobSettings) -> list[dict[str, Any]]:
    """The `metrics` port a PodMonitor selects by name."""
    return [{"name": "metrics", "containerPort": settings.metrics_port, "protocol": "TCP"}]


def _mount_source(pod: dict[str, Any], source: DataSource) -> None:
    """The data source's claim, read-only, where the runner reads `source.files`
    (the step file's dataset.sourceRoot default): only insert steps load it."""
    pod["volumes"].append({
        "name": "source",
        "persistentVolumeClaim": {"claimName": source.claim_name, "readOnly": True},
    })  # fmt: skip
    pod["containers"][0]["volumeMounts"].append(
        {"name": "source", "mountPath": SOURCE_MOUNT, "readOnly": True}
    )


def _pod_spec(
    run: RunRef, spec: BenchmarkRunSpec, step: Step, access: TargetAccess, settings: JobSettings
) -> dict[str, Any]:
    runner = spec.runner
    pod: dict[str, Any] = {
        "restartPolicy": "Never",
        # Runners talk to databases and the results service, never to the API.
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "securityContext": {
            "runAsNonRoot": True, "runAsUser": RUNNER_UID, "runAsGroup": RUNNER_UID,
            "fsGroup": RUNNER_UID, "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [{
            "name": "runner",
            "image": settings.image,
            "imagePullPolicy": settings.pull_policy,
            "args": ["job", "--config", f"{STEP_DIR}/step.yaml", "--out", "/work/out"],
            "env": _env(run, step, settings),
            "volumeMounts": _mounts(access),
            "terminationMessagePolicy": "FallbackToLogsOnError",
            "securityContext": {
                "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                "capabilities": {"drop": ["ALL"]},
            },
        }],
        "volumes": _volumes(run, step, access),
    }  # fmt: skip
    if settings.metrics_port:
        pod["containers"][0]["ports"] = _ports(settings)
    if spec.dataset.source is not None and step.phase_type == "insert":
        _mount_source(pod, spec.dataset.source)
    if runner.resources is not None:
        resources = runner.resources.model_dump(by_alias=True, exclude_none=True)
        pod["containers"][0]["resources"] = resources
    if runner.node_selector:
        pod["nodeSelector"] = dict(runner.node_selector)
    if runner.tolerations:
        pod["tolerations"] = [
            t.model_dump(by_alias=True, exclude_none=True) for t in runner.tolerations
        ]
    # Client-side routers: a mongos beside the runner, which connects to it.
    return with_router(pod, access.router)


def build_runner_job(
    run: RunRef,
    spec: BenchmarkRunSpec,
    step: Step,
    access: TargetAccess,
    settings: JobSettings,
    *,
    database_pods: dict[str, list[object]],
) -> dict[str, Any]:
    """The step's Indexed Job. `database_pods` ({pod: [uid, restarts]}) is recorded
    so that a database pod lost during the step is noticed, even after a restart."""
    pods = spec.runner.pods
    labels = step_labels(run, step, "runner")
    manifest = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": job_name(run, step),
            "labels": labels,
            "annotations": {DATABASE_PODS_ANNOTATION: json.dumps(database_pods, sort_keys=True)},
        },
        "spec": {
            "completionMode": "Indexed",
            "completions": pods,
            "parallelism": pods,
            # Never a second attempt: a retried insert pod re-inserts its share, a
            # retried reader stretches the merged window over both attempts. Any
            # failure or disruption fails the Job at once (and the step and run).
            "backoffLimit": 0,
            "activeDeadlineSeconds": settings.active_deadline_seconds,
            "podFailurePolicy": {"rules": [
                {"action": "FailJob", "onExitCodes": {
                    "containerName": "runner", "operator": "NotIn", "values": [0]}},
                {"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget"}]},
            ]},
            "template": {
                "metadata": {"labels": labels},
                "spec": _pod_spec(run, spec, step, access, settings),
            },
        },
    }  # fmt: skip
    return adopt(manifest, run)
