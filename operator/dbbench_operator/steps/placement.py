"""A step's nodes.json: its pods and the nodes they ran on, read from the API when
the step's Job has ended and written next to the step's merged files.

The pods are read then (the runner Job's pods stay until the run's cleanup, the
target's members until it is retired); each node with one list call filtered
by name (`nodes` list, cluster-wide: the permission admission already uses,
so reading a node needs no `get`). A node that cannot be read is named with
the reason instead: the record is the run's description, never a reason for
the run to fail.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import Any

from dbbench_contract.api import BenchmarkRunSpec
from dbbench_contract.layout import NODES
from dbbench_contract.step_nodes import StepNodes
from dbbench_operator.k8s import api
from dbbench_operator.naming import RunRef
from dbbench_operator.settings import OperatorSettings
from dbbench_operator.specs.node_record import step_nodes
from dbbench_operator.specs.plan import Step
from dbbench_operator.specs.runner_job import step_dir
from dbbench_operator.steps import results_service, runner_jobs

log = logging.getLogger(__name__)


def read_nodes(names: Iterable[str]) -> dict[str, dict[str, Any]]:
    """{name: Node} for each name that exists (one list by metadata.name each)."""
    found: dict[str, dict[str, Any]] = {}
    for name in sorted(set(names)):
        for node in api.list_objects("v1", "Node", None, fields={"metadata.name": name}):
            found[name] = node
    return found


Pods = tuple[list[dict[str, Any]], list[dict[str, Any]]]  # (database, runners)


def read_step_pods(run: RunRef, spec: BenchmarkRunSpec, step: Step, job: dict[str, Any]) -> Pods:
    """The step's pods as the API shows them now: the target's database members and
    the Job's runner pods (two lists)."""
    index = next(i for i, t in enumerate(spec.targets) if t.name == step.target)
    return runner_jobs.database_pods(run, spec, index), runner_jobs.job_pods(run, job)


def step_pods(
    run: RunRef, spec: BenchmarkRunSpec, step: Step, job: dict[str, Any], read: Pods | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """The step's pods (`read`: as this pass already read them, else read now): the
    target's database members, the Job's runner pods, and the names of their nodes."""
    database, runners = read_step_pods(run, spec, step, job) if read is None else read
    names = [n for p in [*database, *runners] if (n := (p.get("spec") or {}).get("nodeName"))]
    return database, runners, names


def read_step_nodes(
    run: RunRef, spec: BenchmarkRunSpec, step: Step, job: dict[str, Any]
) -> StepNodes:
    """The step's pods (the target's database members, the Job's runner pods) and
    their nodes as the API shows them now."""
    database, runners, names = step_pods(run, spec, step, job)
    try:
        nodes, error = read_nodes(names), None
    except api.KubeError as exc:
        nodes, error = {}, f"nodes not read: {exc}"
    return step_nodes(database, runners, nodes, step.target, error=error)


def record(
    settings: OperatorSettings,
    run: RunRef,
    spec: BenchmarkRunSpec,
    step: Step,
    job: dict[str, Any],
) -> None:
    """Write the step's nodes.json (again: the same file, as the pods stand now)."""
    document = read_step_nodes(run, spec, step, job)
    path = f"{step_dir(step)}/{NODES}"
    results_service.put_file(settings, run, path, json.dumps(document.to_wire(), indent=1).encode())


def record_quietly(
    settings: OperatorSettings,
    run: RunRef,
    spec: BenchmarkRunSpec,
    step: Step,
    job: dict[str, Any],
) -> None:
    """`record` for a step that failed: what cannot be read or written is logged,
    and the run's failure is reported as it is."""
    try:
        record(settings, run, spec, step, job)
    except (api.KubeError, results_service.ResultsServiceError) as exc:
        log.warning("nodes of %s/%s step %d not recorded: %s", run.namespace, run.name,
                    step.index + 1, exc)  # fmt: skip
