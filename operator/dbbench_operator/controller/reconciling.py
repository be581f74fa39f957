"""One reconciliation pass of a run: check the clock, observe and act, decide
(pure), and describe the status.

Order matters: the timeout is checked before any work, and any exception of
a pass becomes a condition instead of escaping to kopf (which would retry
without ever patching the status or checking the timeout). Failed passes are
retried (`controller/concluding`: after `pass_error_limit` in a row over
`pass_error_window` seconds the run fails with the last error's reason). A
pass that hangs is abandoned at its deadline (`reconcile_within`:
`pass_deadline`, or sooner at spec.timeout) and counts as a failed pass, or
as the timeout. So every run ends: at the latest when spec.timeout has passed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from dbbench_contract.api import BenchmarkRunSpec, BenchmarkRunStatus, SpecError, parse_spec
from dbbench_contract.api.base import Problem
from dbbench_contract.api.expectation_checks import series_problems
from dbbench_contract.api.semantics import check
from dbbench_contract.api.semantics import results_claim_problems as claim_problems
from dbbench_contract.api.status import Condition
from dbbench_contract.history import SERIES_LABEL
from dbbench_operator import deadlines
from dbbench_operator.controller import admission
from dbbench_operator.controller.concluding import (
    Event,
    Outcome,
    Pass,
    conclude,
    decision_events,
    ended,
    merged,
    pass_failed,
)
from dbbench_operator.deadlines import PassDeadlineError
from dbbench_operator.k8s.pod_stalls import VAGUE
from dbbench_operator.naming import RunRef
from dbbench_operator.settings import OperatorSettings
from dbbench_operator.specs.plan import Step, plan
from dbbench_operator.specs.tokens import results_prefix
from dbbench_operator.status import expectations
from dbbench_operator.status.expectations import Measured
from dbbench_operator.status.lifecycle import (
    RECONCILED,
    TERMINAL,
    Decision,
    Observation,
    RunPhase,
    next_state,
    timeout_decision,
)
from dbbench_operator.status.recording import (
    as_patch,
    cold_mark_of,
    conform,
    progress_block,
    read_status,
    runner_image,
    status_patch,
    step_event,
    target_entries,
)
from dbbench_operator.status.summaries import (
    compacted,
    last_result,
    phase_result,
    run_progress,
    saturation,
    with_result,
)
from dbbench_operator.steps import cold_cache, collecting
from dbbench_operator.steps.advancing import Advance, Context, advance
from dbbench_operator.targets import teardown

__all__ = [
    "Outcome", "current_phase", "deleted", "needs_pass", "reconcile", "reconcile_within",
    "seconds_left",
]  # fmt: skip


def results_claim_problems(
    spec: BenchmarkRunSpec | None, settings: OperatorSettings
) -> tuple[Problem, ...]:
    """One results service owns one claim (the chart's): a run cannot choose another."""
    return () if spec is None else tuple(claim_problems(spec, settings.results_claim))


def parse(raw_spec: Mapping[str, Any]) -> tuple[BenchmarkRunSpec | None, tuple[Problem, ...]]:
    """The typed spec and the semantic problems CEL cannot catch."""
    try:
        spec = parse_spec(raw_spec)
    except SpecError as exc:
        return None, tuple(exc.problems)
    return spec, tuple(check(spec))


def admitted(
    raw_spec: Mapping[str, Any], settings: OperatorSettings, labels: Mapping[str, str] | None
) -> tuple[BenchmarkRunSpec | None, tuple[Problem, ...]]:
    """The typed spec and every problem the operator refuses a run with: the spec's
    own, the results claim, and what needs the run's labels (a tolerance's series)."""
    spec, problems = parse(raw_spec)
    if spec is None:
        return spec, problems
    return spec, (
        *problems, *results_claim_problems(spec, settings), *series_problems(spec, labels),
    )  # fmt: skip


def current_phase(status: Mapping[str, Any] | BenchmarkRunStatus) -> RunPhase:
    return RunPhase(read_status(status).phase or RunPhase.PENDING)


def needs_pass(status: Mapping[str, Any] | BenchmarkRunStatus) -> bool:
    """Active runs, and ended runs whose children are not cleaned up yet."""
    typed = read_status(status)
    return current_phase(typed) not in TERMINAL or not typed.cleaned_up


def seconds_left(
    raw_spec: Mapping[str, Any], status: Mapping[str, Any] | BenchmarkRunStatus, now: datetime
) -> float | None:
    """Seconds until spec.timeout of a started, unfinished run (None: no clock yet)."""
    spec, _ = parse(raw_spec)
    typed = read_status(status)
    started = typed.started_at
    if spec is None or started is None or current_phase(typed) in TERMINAL:
        return None
    return spec.timeout.seconds - (now - started).total_seconds()


def reconcile_within(
    run: RunRef,
    raw_spec: Mapping[str, Any],
    raw_status: Mapping[str, Any],
    now: datetime,
    settings: OperatorSettings,
) -> Outcome:
    """`reconcile`, abandoned at `pass_deadline` or at spec.timeout, whichever is first."""
    left = seconds_left(raw_spec, raw_status, now)
    budget = settings.pass_deadline
    if left is not None and left > 0:
        budget = min(budget, left + 1)  # past it, the pass ends the run before any I/O
    try:
        outcome = deadlines.call_within(
            lambda: reconcile(run, raw_spec, raw_status, now, settings), budget, run.name
        )
    except PassDeadlineError as exc:
        later = now + timedelta(seconds=budget)
        spec, problems = parse(raw_spec)
        status = read_status(raw_status)
        p = Pass(run, status, later, settings, spec, problems, current_phase(status))
        if left is not None and spec is not None and left + 1 <= budget:
            outcome = conclude(p, timeout_decision(timedelta(seconds=spec.timeout.seconds)))
        else:
            outcome = pass_failed(p, exc)
    return replace(outcome, status=conform(outcome.status))


def reconcile(
    run: RunRef,
    raw_spec: Mapping[str, Any],
    raw_status: Mapping[str, Any],
    now: datetime,
    settings: OperatorSettings,
) -> Outcome:
    labels = {SERIES_LABEL: run.series} if run.series else {}
    spec, problems = admitted(raw_spec, settings, labels)
    status = read_status(raw_status)  # the one reading of the stored status
    p = Pass(run, status, now, settings, spec, problems, current_phase(status))
    if p.phase in TERMINAL:
        return ended(p)
    started = status.started_at
    timeout = timedelta(seconds=spec.timeout.seconds) if spec is not None else None
    if started is not None and timeout is not None and now - started > timeout:
        return conclude(p, timeout_decision(timeout))
    try:
        obs, extra, events = _observe(p)
    except Exception as exc:  # noqa: BLE001 - a failed pass becomes a condition, never escapes
        return pass_failed(p, exc)
    decision = next_state(p.phase, replace(obs, started_at=started, timeout=timeout))
    if decision is None:
        return Outcome()
    if decision.phase in TERMINAL:
        return conclude(p, decision, extra, events)
    patch = {**_base(p, decision), **extra}
    return Outcome(patch, (*events, *decision_events(decision)))


def _base(p: Pass, decision: Decision) -> dict[str, Any]:
    path = f"{p.settings.results_claim}/{results_prefix(p.run)}/"
    patch = status_patch(
        p.run, status=p.status, decision=decision, now=p.now, results_path=path,
        started=decision.phase is not RunPhase.PENDING,
        runner_image=runner_image(p.status, p.settings),
    )  # fmt: skip
    if p.status.failed_passes:
        # A good pass ends a series of failed ones.
        patch.update(failedPasses=None, failingSince=None)
        patch["conditions"] = merged(
            p, patch["conditions"], RECONCILED, "True", "PassSucceeded", ""
        )
    return patch


# -- observing -------------------------------------------------------------------


def _observe(p: Pass) -> tuple[Observation, dict[str, Any], tuple[Event, ...]]:
    """What this pass sees; performs the phase's idempotent work on the way."""
    obs = Observation(now=p.now, problems=p.problems)
    spec, run, settings = p.spec, p.run, p.settings
    if spec is None or p.problems:
        return obs, {}, ()
    steps = plan(spec)
    obs = replace(obs, steps_total=len(steps))
    if p.phase is RunPhase.PENDING:
        if spec.restarts_databases and not settings.allow_cache_drop:
            return replace(obs, failure=cold_cache.not_allowed(spec)), {}, ()
        misfit = admission.misfit(spec, settings)
        if misfit is not None:
            return replace(obs, failure=misfit), {}, ()
        return replace(obs, blocked=admission.blocker(run, spec, settings)), {}, ()
    progress = p.status.progress
    if p.phase is RunPhase.COLLECTING:
        return _collect(p, obs, spec, steps)
    started = p.status.started_at or p.now
    left = spec.timeout.seconds - (p.now - started).total_seconds()
    ctx = Context(
        run, spec, steps, settings, deadline_seconds=int(left), now=p.now,
        runner_image=runner_image(p.status, settings), started=started,
        targets_status=p.status.targets,
    )  # fmt: skip
    steps_done = (progress.steps_done if progress else None) or 0
    moved = advance(ctx, steps_done=steps_done, cold_mark=cold_mark_of(progress))
    extra, events = _recorded(spec, p.status, moved, p.now)
    return _observed(obs, moved, p.status), extra, (*events, *_stall_event(moved, p.status))


def _collect(
    p: Pass, obs: Observation, spec: BenchmarkRunSpec, steps: list[Step]
) -> tuple[Observation, dict[str, Any], tuple[Event, ...]]:
    """The run's expectations judged on its merged steps, then its summary.json
    written and the run judged against its series (the ChangePoint condition and
    its Event); or the failed step that keeps it from succeeding (a run never
    ends Succeeded with a failed step), or the missed expectations that fail it
    (onMiss: Fail; its failed summary is written and judged on the way out)."""
    merged = collecting.merged_steps(p.settings, p.run, steps)
    failed = collecting.first_failed(steps, merged)
    if failed is not None:
        return replace(obs, failure=failed), {}, ()
    measured = [Measured(s.target, s.phase, s.repeat, merged[s.index]) for s in steps]
    recent = collecting.recent_figures(p.settings, p.run, spec)
    outcomes = expectations.judge(spec, measured, recent)
    judged = expectations.condition(bool(spec.expectations), outcomes)
    obs = replace(obs, expectations=judged)
    extra = {"expectations": [as_patch(o) for o in outcomes] or None}
    if expectations.fails_run(outcomes):
        return replace(obs, failure=(expectations.EXPECTATIONS_MISSED, judged.message)), extra, ()
    done = collecting.write_run_summary(
        p.settings, p.run, spec, steps, started_at=p.status.started_at, now=p.now,
        status_targets=p.status.targets, succeeded=merged,
        ending=collecting.Ending(expectations=tuple(outcomes)),
    )  # fmt: skip
    if done is not None:
        return replace(obs, failure=done), extra, ()
    events: tuple[Event, ...] = ()
    if spec.expectations:
        kind = "Warning" if judged.reason == expectations.MISSED else "Normal"
        events = ((kind, f"Expectations{judged.reason}", judged.message),)
    verdict = collecting.judge_run(p.settings, p.run)
    collected = replace(obs, steps_done=len(steps), collected=True,
                        change_point=verdict.condition)  # fmt: skip
    return collected, extra, (*events, verdict.event)


def _condition(status: BenchmarkRunStatus, kind: str) -> Condition | None:
    return next((c for c in status.conditions if c.type == kind), None)


def _stall_event(moved: Advance, status: BenchmarkRunStatus) -> tuple[Event, ...]:
    """One Warning when pods start waiting for a new reason (not one per pass);
    none for the ordinary steps of a start (Pending, ContainerCreating)."""
    if moved.stalled is None or moved.stalled[0] in VAGUE:
        return ()
    old = _condition(status, "Progressing")
    if old is not None and old.reason == moved.stalled[0]:
        return ()
    return (("Warning", *moved.stalled),)


def _observed(obs: Observation, moved: Advance, status: BenchmarkRunStatus) -> Observation:
    degraded = moved.degraded
    old = _condition(status, "Degraded")
    if degraded is not None and old is not None and old.message == degraded[1]:
        degraded = None  # already reported: one Warning per disturbance
    saturated = None
    if moved.collected is not None and moved.current is not None:
        saturated = saturation(moved.current, moved.collected)
    return replace(
        obs,
        saturated=saturated,
        steps_done=moved.steps_done,
        stage=moved.stage,
        reason=moved.reason,
        message=moved.message,
        target_ready=None if moved.target is None else moved.target.ready,
        failure=moved.failure,
        degraded=degraded,
    )


def _recorded(
    spec: BenchmarkRunSpec, status: BenchmarkRunStatus, moved: Advance, now: datetime
) -> tuple[dict[str, Any], tuple[Event, ...]]:
    """Progress, per-target results and the step's event: the status beyond the phase."""
    steps_total = len(plan(spec))
    names = [t.name for t in spec.targets]
    targets = target_entries(status.targets, names, moved.target)
    extra: dict[str, Any] = {}
    events: tuple[Event, ...] = ()
    if moved.collected is not None and moved.current is not None:
        result = phase_result(moved.current, moved.collected)
        targets = with_result(targets, moved.current, result)
        extra["lastResult"] = last_result(moved.current, moved.collected)
        if moved.failure is None:  # a failed step's result is recorded; the failure says why
            events = (("Normal", "StepCompleted", step_event(moved.current, moved.collected)),)
    targets, omitted = compacted(targets)
    if omitted:
        extra["resultsOmitted"] = (status.results_omitted or 0) + omitted
    live = moved.step_progress
    progress = progress_block(
        status.progress,
        steps_total=steps_total,
        steps_done=moved.steps_done,
        current=moved.current,
        stage=str(moved.stage) if moved.stage else None,
        run_progress=run_progress(
            moved.steps_done,
            steps_total,
            None if live is None else live.percent,
            status.started_at,
            now,
        ),
        ops_per_second=None if live is None else live.rate,
        records_per_second=None if live is None else live.records_per_second,
        cold_mark=moved.cold_mark,
    )
    return {**extra, "targets": targets, "progress": progress}, events


def deleted(run: RunRef, raw_spec: Mapping[str, Any], settings: OperatorSettings) -> None:
    """The run is being deleted: its children in its namespace are deleted now, not
    left to the garbage collector (`targets/teardown.remove_children`), and its cache-drop
    Jobs in the operator's namespace, which no owner reference can reach. Raises to
    be retried (the run's finalizer holds it until this succeeds)."""
    spec, _ = parse(raw_spec)

    def remove() -> None:
        teardown.remove_children(run, spec, settings)  # every kind if spec is None
        if spec is not None:
            teardown.remove_cache_drops(run, spec, settings)

    deadlines.call_within(remove, settings.pass_deadline, f"{run.name}-deleted")
    admission.release(run)
