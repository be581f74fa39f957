"""cache: cold and coldOnce: before a measured step, restart the target's database
pods and drop the page cache of the nodes they run on, so reads come from disk.
Which steps start so is the plan's decision (`specs/plan.cold_starts`): every
measured step (cold) or each target's first (coldOnce).

Never pretended: without the chart's permission for the privileged cache-drop
pods the run fails before it starts (reconciling checks it), and a cache drop
that fails fails the run. The privileged pods run in the operator's own
namespace (the release namespace), never in the run's, so benchmark
namespaces can enforce Pod Security `baseline`; they are found by the run's
uid label and deleted by the run's cleanup (`targets/teardown`).

Progress is kept in the status (the step whose pods were restarted and their
old uids), so a restarted operator neither skips nor repeats the restart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dbbench_contract.api import BenchmarkRunSpec
from dbbench_operator.k8s import api
from dbbench_operator.naming import RunRef
from dbbench_operator.specs.cache_drop_job import build_cache_drop_job, cache_drop_labels
from dbbench_operator.specs.plan import Step, cold_starts
from dbbench_operator.steps.runner_jobs import database_pods


def not_allowed(spec: BenchmarkRunSpec) -> tuple[str, str]:
    """The failure of a run whose cache mode needs the privileged pods this
    installation does not allow, naming its mode."""
    return (
        "ColdCacheNotAllowed",
        f"spec.cache: {spec.cache} needs privileged pods to drop the nodes' page cache, which "
        "this installation does not allow; install the chart with --set "
        "coldCache.allowPrivilegedPods=true or use cache: warm",
    )


@dataclass(frozen=True)
class Cooling:
    done: bool
    reason: str = ""
    message: str = ""
    # (step number, uids of the pods restarted for it), to record in the status
    mark: tuple[int, tuple[str, ...]] | None = None
    failure: tuple[str, str] | None = None


def needed(spec: BenchmarkRunSpec, steps: list[Step], step: Step) -> bool:
    """Whether `step` starts with a restart and a page-cache drop (`cold_starts`)."""
    return step.index in cold_starts(spec, steps)


def _ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def prepare(
    run: RunRef,
    spec: BenchmarkRunSpec,
    step: Step,
    mark: tuple[int, tuple[str, ...]] | None,
    *,
    image: str,
    namespace: str,
) -> Cooling:
    """Restart the target's pods once for this step, wait for them, then drop the page
    cache of their nodes with Jobs in `namespace` (the operator's own)."""
    number = step.index + 1
    index = next(i for i, t in enumerate(spec.targets) if t.name == step.target)
    pods = database_pods(run, spec, index)
    if mark is None or mark[0] != number:
        for pod in pods:
            api.delete("v1", "Pod", run.namespace, pod["metadata"]["name"])
        uids = tuple(sorted(p["metadata"]["uid"] for p in pods))
        message = f"step {number}: restarting {len(pods)} database pod(s) for a cold cache"
        return Cooling(False, "RestartingDatabase", message, mark=(number, uids))
    old = set(mark[1])
    fresh = [p for p in pods if p["metadata"]["uid"] not in old]
    if len(fresh) < len(old) or not all(_ready(p) for p in fresh):
        ready = sum(_ready(p) for p in fresh)
        message = f"step {number}: {ready}/{len(old)} restarted database pods ready"
        return Cooling(False, "RestartingDatabase", message)
    nodes = sorted({p["spec"]["nodeName"] for p in fresh})
    return _drop_caches(run, step, nodes, image, namespace)


def _drop_caches(run: RunRef, step: Step, nodes: list[str], image: str, namespace: str) -> Cooling:
    number = step.index + 1
    for node in nodes:
        api.create_if_absent(build_cache_drop_job(run, step, node, image, namespace))
    jobs = api.list_objects("batch/v1", "Job", namespace, cache_drop_labels(run, step))
    for job in jobs:
        conditions = {
            c["type"]: c for c in (job.get("status") or {}).get("conditions") or []
            if c.get("status") == "True"
        }  # fmt: skip
        if "Failed" in conditions:
            detail = conditions["Failed"].get("message") or conditions["Failed"].get("reason")
            message = (
                f"step {number}: cache-drop Job {namespace}/{job['metadata']['name']} failed "
                f"({detail}); check that the operator's namespace {namespace} admits "
                "privileged pods (Pod Security level privileged)"
            )
            return Cooling(False, failure=("CacheDropFailed", message))
    done = sum(
        any(c.get("type") == "Complete" and c.get("status") == "True"
            for c in (j.get("status") or {}).get("conditions") or [])
        for j in jobs
    )  # fmt: skip
    if done < len(nodes):
        message = f"step {number}: page cache dropped on {done}/{len(nodes)} node(s)"
        return Cooling(False, "DroppingPageCache", message)
    return Cooling(True, "CacheDropped", f"step {number}: databases restarted, page cache dropped")
