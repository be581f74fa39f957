"""A step whose database or runner pods sit on a lost node fails (`specs/node_loss`).

Read on every pass of a running step: the target's database pods, the step
Job's pods (a following pass hands over the lists it read), and the nodes of
those that are not Ready (one list by
metadata.name each, as a step's nodes.json reads them; none while every pod is
Ready). A node that cannot be read fails nothing: the next pass reads it again.
"""

from __future__ import annotations

from typing import Any

from dbbench_contract.api import BenchmarkRunSpec
from dbbench_operator.k8s import api
from dbbench_operator.naming import RunRef
from dbbench_operator.specs.node_loss import lost_nodes, node_lost_failure, suspect_nodes
from dbbench_operator.specs.plan import Step
from dbbench_operator.steps.placement import Pods, read_nodes, step_pods


def lost_node_failure(
    run: RunRef,
    spec: BenchmarkRunSpec,
    step: Step,
    job: dict[str, Any],
    where: str,
    *,
    read: Pods | None = None,
) -> tuple[str, str] | None:
    """`read`: the step's (database, runner) pods as this pass already read them."""
    database, runners, _ = step_pods(run, spec, step, job, read)
    names = suspect_nodes(database, runners)
    if not names:
        return None
    try:
        nodes = read_nodes(names)
    except api.KubeError:
        return None
    return node_lost_failure(lost_nodes(database, runners, nodes), where)
