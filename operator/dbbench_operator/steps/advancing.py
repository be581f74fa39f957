"""One pass of a started run: the current step moved on as far as it can go.

Steps run strictly in order (targets one after another, each target's phases
and repeats in order), so the number of steps done is the whole record of
progress. For the current step a pass: retires earlier targets, deploys the
step's target, restarts it cold if asked, starts the step's runner Job, follows
it, and merges its results once it has succeeded. Every action is idempotent
and named after the step, so a pass repeated after an operator restart
neither duplicates nor loses a step. A step whose runner pod failed or was
disrupted fails (`steps/outcome`): it is never re-run, and only a step whose
runner measured its whole phase (an error rate above the limit) is merged. A
step whose merged summary says failed (every pod exited 0, but the merge of all
pods sees what no pod could) fails the run too, its result recorded. A step's
Job that has ended, well or not, has its pods' nodes recorded (`steps/placement`).
An object the run needs under a name it does not own (an earlier run of the
same name not yet collected) is waited for, up to spec.startupGrace; so is a
database whose pods are ready but which the setup cannot use yet (a refused
login, replicas not streaming), from the first pass that saw it so (kept in
the target's Ready condition as lastTransitionTime).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from dbbench_contract.api import BenchmarkRunSpec
from dbbench_contract.api.status import TargetResult
from dbbench_contract.progress import StepProgress
from dbbench_contract.summary import StepSummary
from dbbench_operator.k8s.ownership import ForeignChildError, PreviousRunChildError
from dbbench_operator.k8s.pod_stalls import Stall, judge
from dbbench_operator.naming import RunRef
from dbbench_operator.settings import OperatorSettings
from dbbench_operator.specs.addresses import target_access
from dbbench_operator.specs.plan import Step
from dbbench_operator.specs.runner_job import JobSettings, step_dir
from dbbench_operator.specs.tokens import run_token
from dbbench_operator.status.lifecycle import Stage
from dbbench_operator.status.observations import TargetSeen
from dbbench_operator.steps import (
    cold_cache,
    collecting,
    node_loss,
    placement,
    results_service,
    runner_jobs,
)
from dbbench_operator.steps.outcome import (
    MEASURED_TO_THE_END,
    JobState,
    failed_step,
    stopped_early,
)
from dbbench_operator.targets import provisioning, refusals, teardown

ColdMark = tuple[int, tuple[str, ...]]


@dataclass(frozen=True)
class Advance:
    """What one pass achieved and where the run now stands."""

    steps_done: int
    current: Step | None = None
    stage: Stage | None = None
    reason: str = ""
    message: str = ""
    target: TargetSeen | None = None
    failure: tuple[str, str] | None = None
    degraded: tuple[str, str] | None = None
    # (pod's reason, message) while database or runner pods have not started
    stalled: tuple[str, str] | None = None
    collected: StepSummary | None = None  # merged summary of `current`
    step_progress: StepProgress | None = None
    cold_mark: ColdMark | None = None


@dataclass(frozen=True)
class Context:
    """One pass over one run: what every action below needs."""

    run: RunRef
    spec: BenchmarkRunSpec
    steps: list[Step]
    settings: OperatorSettings
    deadline_seconds: int  # what is left of spec.timeout
    now: datetime
    runner_image: str  # fixed when the run left Pending (status.runnerImage)
    started: datetime | None = None
    targets_status: Sequence[TargetResult] = ()  # status.targets as the pass found it


def _stalled(
    ctx: Context, base: Advance, stalls: tuple[Stall, ...], what: str, waiting: str
) -> Advance | None:
    """Pods that have not started: fail once one used up spec.startupGrace, else say
    why and until when; None when every pod has started."""
    grace = ctx.spec.startup_grace
    verdict = judge(stalls, grace.seconds, ctx.now)
    stall = verdict.stall
    if stall is None:
        return None
    if verdict.overdue:
        message = (
            f"{what} {stall.subject} did not start within spec.startupGrace ({grace}): "
            f"{stall.reason}: {stall.message}"
        )
        return _with(base, failure=(stall.reason, message.rstrip(": ")))
    until = verdict.deadline.strftime("%Y-%m-%dT%H:%M:%SZ") if verdict.deadline else "?"
    message = f"{waiting} (the run fails at {until} unless it starts: spec.startupGrace {grace})"
    return _with(base, reason=stall.reason, message=message, stalled=(stall.reason, message))


def _describe(step: Step, total: int) -> str:
    return f"step {step.index + 1}/{total} ({step.target}/{step.phase}/{step.repeat})"


def advance(ctx: Context, *, steps_done: int, cold_mark: ColdMark | None) -> Advance:
    try:
        return _advance(ctx, steps_done=steps_done, cold_mark=cold_mark)
    except ForeignChildError as exc:
        return _taken(ctx, steps_done, exc)


def _taken(ctx: Context, steps_done: int, exc: ForeignChildError) -> Advance:
    """A name the run needs is another's: wait for an earlier run's leftovers to be
    collected (bounded by spec.startupGrace from the run's start), else fail."""
    step = ctx.steps[min(steps_done, len(ctx.steps) - 1)]
    base = Advance(steps_done, step, Stage.PROVISIONING)
    message = f"{_describe(step, len(ctx.steps))}: {exc.describe()}"
    grace = ctx.spec.startup_grace.seconds
    waited = (ctx.now - ctx.started).total_seconds() if ctx.started is not None else 0.0
    if isinstance(exc, PreviousRunChildError) and waited < grace:
        return _with(base, reason=exc.reason, message=message)
    if isinstance(exc, PreviousRunChildError):
        message += f"; still there after spec.startupGrace ({ctx.spec.startup_grace})"
    return _with(base, failure=(exc.reason, message))


def _advance(ctx: Context, *, steps_done: int, cold_mark: ColdMark | None) -> Advance:
    run, spec, steps = ctx.run, ctx.spec, ctx.steps
    if steps_done >= len(steps):
        return Advance(steps_done)
    step = steps[steps_done]
    here = _describe(step, len(steps))
    index = next(i for i, t in enumerate(spec.targets) if t.name == step.target)
    left = teardown.retire_targets(run, spec, index, policies=ctx.settings.network_policies)
    if left:
        message = f"{here}: waiting for {left} database pod(s) of earlier targets to stop"
        return Advance(steps_done, step, Stage.TEARING_DOWN, "RetiringPreviousTarget", message)
    provisioning.ensure_run_objects(run, steps, run_token(ctx.settings.results_key, run))
    job = runner_jobs.find_job(run, step)
    seen = provisioning.ensure_target(run, spec, index, set_up=job is None)
    base = Advance(steps_done, step, target=seen, cold_mark=cold_mark)
    failure = seen.failure
    if failure is None and job is not None and not seen.ready:
        # A lost node makes its pods unready: a failure naming it, not a start waited out.
        failure = _lost_node(ctx, step, here, job)
    if failure is not None:
        return _with(base, failure=failure)
    if not seen.ready:
        return _not_ready(ctx, base, seen, here, external=spec.targets[index].external is not None,
                          cooling_now=job is None and cold_mark is not None
                          and cold_mark[0] == step.index + 1)  # fmt: skip
    if job is None:
        return _start(ctx, step, here, base)
    return _follow(ctx, step, here, base, job)


def _not_ready(
    ctx: Context, base: Advance, seen: TargetSeen, here: str, *, external: bool, cooling_now: bool
) -> Advance:
    """The step's target is not usable yet: its pods have not started, or (pods
    ready) the database refuses or is still being set up; both end at the grace."""
    stage = Stage.COOLING if cooling_now else Stage.PROVISIONING
    waiting = _with(base, stage=stage, reason=seen.reason,
                    message=f"{here}: target {seen.name}: {seen.message}")  # fmt: skip
    if seen.settling:
        return _settling(ctx, waiting, seen, here, external=external)
    what = f"{here}: target {seen.name}: database"
    return _stalled(ctx, waiting, seen.stalls, what, waiting.message) or waiting


def _settling_since(ctx: Context, name: str) -> datetime:
    """When this target's wait for a usable database began: kept in its Ready
    condition by the passes before, else now (the pods were not ready before)."""
    entry = next((t for t in ctx.targets_status if t.name == name), None)
    conditions = [] if entry is None else entry.conditions
    ready = next((c for c in conditions if c.type == "Ready"), None)
    if ready is not None and ready.status == "False":
        return ready.last_transition_time or ctx.now
    return ctx.now


def _settling(
    ctx: Context, waiting: Advance, seen: TargetSeen, here: str, *, external: bool
) -> Advance:
    """Pods ready (or external), database not usable: say why and until when, and
    fail once it has lasted spec.startupGrace, naming the target and the last error."""
    seen = replace(seen, since=_settling_since(ctx, seen.name))
    waiting = _with(waiting, target=seen)
    grace = ctx.spec.startup_grace
    verdict = judge((Stall(f"target {seen.name}", seen.reason, seen.message, seen.since),),
                    grace.seconds, ctx.now)  # fmt: skip
    if verdict.overdue:
        after = "the first attempt to reach it" if external else "its pods were ready"
        last = "last error" if seen.reason in refusals.REASONS else "still"
        message = (
            f"{here}: target {seen.name}: the database was not usable within "
            f"spec.startupGrace ({grace}) after {after}; {last}: {seen.reason}: {seen.message}"
        )
        return _with(waiting, failure=(seen.reason, message))
    until = verdict.deadline.strftime("%Y-%m-%dT%H:%M:%SZ") if verdict.deadline else "?"
    message = (
        f"{here}: target {seen.name}: {seen.message} (the run fails at {until} unless it "
        f"becomes usable: spec.startupGrace {grace})"
    )
    # A refusal is worth a Warning (once per reason); an ordinary wait is not.
    stalled = (seen.reason, message) if seen.reason in refusals.REASONS else None
    return _with(waiting, reason=seen.reason, message=message, stalled=stalled)


def _with(base: Advance, **changes: Any) -> Advance:
    return Advance(**{**base.__dict__, **changes})


def _start(ctx: Context, step: Step, here: str, base: Advance) -> Advance:
    run, spec, settings = ctx.run, ctx.spec, ctx.settings
    if cold_cache.needed(spec, ctx.steps, step):
        cooled = cold_cache.prepare(
            run, spec, step, base.cold_mark, image=ctx.runner_image, namespace=settings.namespace
        )
        if cooled.failure is not None:
            return _with(base, failure=cooled.failure)
        if not cooled.done:
            return _with(base, stage=Stage.COOLING, reason=cooled.reason,
                         message=f"{here}: {cooled.message}",
                         cold_mark=cooled.mark or base.cold_mark)  # fmt: skip
    index = next(i for i, t in enumerate(spec.targets) if t.name == step.target)
    job_settings = JobSettings(
        image=ctx.runner_image,
        pull_policy=settings.runner_pull_policy,
        results_url=settings.results_url,
        deadline_seconds=ctx.deadline_seconds,
        created_at=ctx.now,
        metrics_port=settings.runner_metrics_port,
        metrics_linger=settings.runner_metrics_linger,
    )
    table = collecting.table_before(settings, run, spec, ctx.steps, step)
    runner_jobs.start(run, spec, step, target_access(run, spec, index), job_settings, table=table)
    return _with(base, stage=Stage.RUNNING, reason="StepStarted", message=f"{here}: started")


def _lost_node(
    ctx: Context,
    step: Step,
    here: str,
    job: dict[str, Any],
    *,
    state: JobState | None = None,
    read: placement.Pods | None = None,
) -> tuple[str, str] | None:
    """NodeLost when a database or runner pod of the unfinished step is on a node
    that is not Ready (`steps/node_loss`); `read`: the pods this pass already read,
    else read here once for following the Job and judging the nodes."""
    if read is None:
        read = placement.read_step_pods(ctx.run, ctx.spec, step, job)
    if state is None:
        state, _ = runner_jobs.follow(ctx.run, step, job, read[1])
    if state.finished and not state.failed:
        return None
    return node_loss.lost_node_failure(ctx.run, ctx.spec, step, job, here, read=read)


def _follow(ctx: Context, step: Step, here: str, base: Advance, job: dict[str, Any]) -> Advance:
    run, spec, settings = ctx.run, ctx.spec, ctx.settings
    # The step's pods once a pass: following the Job, a database pod's restart and a
    # lost node all judge the same two lists (read twice before: two of a deployed
    # target's seven calls a pass, one of an external target's four).
    read = placement.read_step_pods(run, spec, step, job)
    state, stalls = runner_jobs.follow(run, step, job, read[1])
    degraded = runner_jobs.disturbance(run, spec, step, job, read[0])
    base = _with(base, degraded=degraded)
    # A lost node first: the Job's own failure it caused would not name the node.
    lost = _lost_node(ctx, step, here, job, state=state, read=read)
    if lost is not None or state.failed:
        placement.record_quietly(settings, run, spec, step, job)
        # Only a runner that measured its whole phase left results worth merging.
        measured = lost is None and state.reason in MEASURED_TO_THE_END
        partial = _partial(run, spec, step, settings) if measured else None
        return _with(base, failure=lost or (state.reason, state.message), collected=partial)
    if stalls:
        waiting = _with(base, stage=Stage.RUNNING)
        described = "; ".join(s.describe() for s in stalls[:3])
        stalled = _stalled(ctx, waiting, stalls, f"{here}: runner",
                           f"{here}: runner pods not started: {described}")  # fmt: skip
        if stalled is not None:
            return stalled
    if not state.finished:
        progress = results_service.step_progress(settings, run, step_dir(step), spec.runner.pods)
        message = state.message or _progress_message(here, progress)
        return _with(base, stage=Stage.RUNNING, reason="RunningStep", message=message,
                     step_progress=progress)  # fmt: skip
    # The nodes before the merge: a pass that fails in between writes both again.
    placement.record(settings, run, spec, step, job)
    merged = collecting.collect_step(settings, run, spec, step)
    stopped = stopped_early(step, merged)
    if stopped is not None:
        return _with(base, failure=stopped)
    failed = failed_step(step, merged)
    if failed is not None:  # recorded as the step's result, and the run fails on it
        return _with(base, failure=failed, collected=merged)
    return _with(
        base, steps_done=base.steps_done + 1, stage=Stage.COLLECTED, reason="StepCompleted",
        message=f"{here}: completed", collected=merged,
    )  # fmt: skip


def _partial(
    run: RunRef, spec: BenchmarkRunSpec, step: Step, settings: OperatorSettings
) -> StepSummary | None:
    """A failed step's results when every pod wrote them (an error-rate failure does)."""
    try:
        return collecting.collect_step(settings, run, spec, step)
    except results_service.ResultsServiceError:
        return None


def _progress_message(here: str, progress: StepProgress | None) -> str:
    if progress is None or not progress.reporting:
        return f"{here}: running"
    done = f", {progress.percent:.0f}%" if progress.percent is not None else ""
    written = (
        f", {progress.records:,} records, {progress.records_per_second:,.0f} records/s"
        if progress.records
        else ""
    )
    return (
        f"{here}: {progress.operations:,} ops, {progress.rate:,.0f} ops/s{written}, "
        f"{progress.errors} errors{done}"
    )
