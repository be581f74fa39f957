"""One reconciliation pass of a run: check the clock, observe and act, decide
(pure), and describe the status.

Order matters: the timeout is checked before any work, and any exception of
a pass becomes a condition instead of escaping to kopf (which would retry
without ever patching the status or checking the timeout). Failed passes are
retried; after `pass_error_limit` in a row over `pass_error_window` seconds
the run fails with the last error's reason. A pass that hangs is abandoned at
its deadline (`reconcile_within`: `pass_deadline`, or sooner at spec.timeout)
and counts as a failed pass, or as the timeout. So every run ends: at the
latest when spec.timeout has passed.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from dbbench_operator import admitting, collecting, cooling, deadlines, tearing_down
from dbbench_operator.deadlines import PassDeadlineError
from dbbench_operator.kube import KubeError
from dbbench_operator.lifecycle import (
    RECONCILED,
    TERMINAL,
    Condition,
    Decision,
    Observation,
    RunPhase,
    fail,
    merge_conditions,
    next_state,
    timeout_decision,
)
from dbbench_operator.model import BenchmarkRunSpec, SpecError, parse_spec
from dbbench_operator.model.base import Problem
from dbbench_operator.model.semantics import check
from dbbench_operator.model.units import parse_duration
from dbbench_operator.naming import RunRef
from dbbench_operator.orchestrating import Advance, Context, advance
from dbbench_operator.planning import plan
from dbbench_operator.recording import (
    cold_mark_of,
    conform,
    parse_stamp,
    progress_block,
    runner_image,
    stamp,
    status_patch,
    step_event,
    target_entries,
)
from dbbench_operator.redaction import driver_error, scrub
from dbbench_operator.results_client import ResultsServiceError
from dbbench_operator.settings import OperatorSettings
from dbbench_operator.startup import VAGUE
from dbbench_operator.summaries import (
    compacted,
    last_result,
    phase_result,
    run_progress,
    saturation,
    with_result,
)
from dbbench_operator.tokens import results_prefix

log = logging.getLogger(__name__)
Event = tuple[str, str, str]  # (Normal|Warning, reason, message)


@dataclass(frozen=True)
class Pass:
    """The inputs of one pass, read once."""

    run: RunRef
    raw_status: Mapping[str, Any]
    now: datetime
    settings: OperatorSettings
    spec: BenchmarkRunSpec | None
    problems: tuple[Problem, ...]
    phase: RunPhase


@dataclass(frozen=True)
class Outcome:
    """What one pass wants recorded: a status patch and events to post."""

    status: dict[str, Any] = field(default_factory=dict)
    events: tuple[Event, ...] = ()
    failed: str | None = None  # a failed pass's reason (the operator's /metrics counts them)


def results_claim_problems(
    spec: BenchmarkRunSpec | None, settings: OperatorSettings
) -> tuple[Problem, ...]:
    """One results service owns one claim (the chart's): a run cannot choose another."""
    if spec is None or spec.results.claim_name == settings.results_claim:
        return ()
    return (Problem(
        "spec.results.claimName",
        f"this operator's results service writes to claim {settings.results_claim!r} (chart "
        f"value results.claimName), not {spec.results.claim_name!r}: leave the field unset or "
        f"set it to {settings.results_claim!r}",
    ),)  # fmt: skip


def parse(raw_spec: Mapping[str, Any]) -> tuple[BenchmarkRunSpec | None, tuple[Problem, ...]]:
    """The typed spec and the semantic problems CEL cannot catch."""
    try:
        spec = parse_spec(raw_spec)
    except SpecError as exc:
        return None, tuple(exc.problems)
    return spec, tuple(check(spec))


def current_phase(raw_status: Mapping[str, Any]) -> RunPhase:
    try:
        return RunPhase(raw_status.get("phase") or RunPhase.PENDING)
    except ValueError:
        return RunPhase.PENDING


def needs_pass(raw_status: Mapping[str, Any]) -> bool:
    """Active runs, and ended runs whose children are not cleaned up yet."""
    return current_phase(raw_status) not in TERMINAL or not raw_status.get("cleanedUp")


def _seconds_left(
    raw_spec: Mapping[str, Any], raw_status: Mapping[str, Any], now: datetime
) -> float | None:
    """Seconds until spec.timeout of a started, unfinished run (None: no clock yet)."""
    spec, _ = parse(raw_spec)
    started = parse_stamp(raw_status.get("startedAt"))
    if spec is None or started is None or current_phase(raw_status) in TERMINAL:
        return None
    return parse_duration(spec.timeout) - (now - started).total_seconds()


def reconcile_within(
    run: RunRef,
    raw_spec: Mapping[str, Any],
    raw_status: Mapping[str, Any],
    now: datetime,
    settings: OperatorSettings,
) -> Outcome:
    """`reconcile`, abandoned at `pass_deadline` or at spec.timeout, whichever is first."""
    left = _seconds_left(raw_spec, raw_status, now)
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
        p = Pass(run, raw_status, later, settings, spec, problems, current_phase(raw_status))
        if left is not None and spec is not None and left + 1 <= budget:
            outcome = _conclude(
                p, timeout_decision(timedelta(seconds=parse_duration(spec.timeout)))
            )
        else:
            outcome = _pass_failed(p, exc)
    return replace(outcome, status=conform(outcome.status))


def reconcile(
    run: RunRef,
    raw_spec: Mapping[str, Any],
    raw_status: Mapping[str, Any],
    now: datetime,
    settings: OperatorSettings,
) -> Outcome:
    spec, problems = parse(raw_spec)
    problems = (*problems, *results_claim_problems(spec, settings))
    p = Pass(run, raw_status, now, settings, spec, problems, current_phase(raw_status))
    if p.phase in TERMINAL:
        return _ended(p)
    started = parse_stamp(raw_status.get("startedAt"))
    timeout = timedelta(seconds=parse_duration(spec.timeout)) if spec is not None else None
    if started is not None and timeout is not None and now - started > timeout:
        return _conclude(p, timeout_decision(timeout))
    try:
        obs, extra, events = _observe(p)
    except Exception as exc:  # noqa: BLE001 - a failed pass becomes a condition, never escapes
        return _pass_failed(p, exc)
    decision = next_state(p.phase, replace(obs, started_at=started, timeout=timeout))
    if decision is None:
        return Outcome()
    if decision.phase in TERMINAL:
        return _conclude(p, decision, extra, events)
    status = {**_base(p, decision), **extra}
    return Outcome(status, (*events, *_decision_events(decision)))


def _base(p: Pass, decision: Decision) -> dict[str, Any]:
    path = f"{p.settings.results_claim}/{results_prefix(p.run)}/"
    status = status_patch(
        p.run, raw_status=p.raw_status, decision=decision, now=p.now, results_path=path,
        started=decision.phase is not RunPhase.PENDING,
        runner_image=runner_image(p.raw_status, p.settings),
    )  # fmt: skip
    if p.raw_status.get("failedPasses"):
        # A good pass ends a series of failed ones.
        status.update(failedPasses=None, failingSince=None)
        status["conditions"] = _merged(p, status, RECONCILED, "True", "PassSucceeded", "")
    return status


def _merged(p: Pass, status: Mapping[str, Any], *condition: str) -> list[dict[str, Any]]:
    existing = status.get("conditions") or []
    return merge_conditions(existing, [Condition(*condition)], p.now, p.run.generation)


def _decision_events(decision: Decision) -> tuple[Event, ...]:
    events: list[Event] = []
    if decision.event is not None:
        kind = "Warning" if decision.phase is RunPhase.FAILED else "Normal"
        events.append((kind, *decision.event))
    if decision.warning is not None:
        events.append(("Warning", *decision.warning))
    return tuple(events)


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
        if spec.cache == "cold" and not settings.allow_cache_drop:
            return replace(obs, failure=cooling.COLD_CACHE_NOT_ALLOWED), {}, ()
        misfit = admitting.misfit(spec)
        if misfit is not None:
            return replace(obs, failure=misfit), {}, ()
        return replace(obs, blocked=admitting.blocker(run, spec, settings)), {}, ()
    progress = p.raw_status.get("progress") or {}
    if p.phase is RunPhase.COLLECTING:
        collecting.write_run_summary(
            settings, run, spec, steps, started_at=p.raw_status.get("startedAt"), now=p.now,
            status_targets=p.raw_status.get("targets") or [],
        )  # fmt: skip
        return replace(obs, steps_done=len(steps), collected=True), {}, ()
    started = parse_stamp(p.raw_status.get("startedAt")) or p.now
    left = parse_duration(spec.timeout) - (p.now - started).total_seconds()
    ctx = Context(
        run, spec, steps, settings, deadline_seconds=int(left), now=p.now,
        runner_image=runner_image(p.raw_status, settings), started=started,
    )  # fmt: skip
    moved = advance(
        ctx, steps_done=int(progress.get("stepsDone") or 0), cold_mark=cold_mark_of(progress)
    )
    extra, events = _recorded(spec, p.raw_status, moved, p.now)
    return _observed(obs, moved, p.raw_status), extra, (*events, *_stall_event(moved, p.raw_status))


def _stall_event(moved: Advance, raw_status: Mapping[str, Any]) -> tuple[Event, ...]:
    """One Warning when pods start waiting for a new reason (not one per pass);
    none for the ordinary steps of a start (Pending, ContainerCreating)."""
    if moved.stalled is None or moved.stalled[0] in VAGUE:
        return ()
    conditions: list[dict[str, Any]] = raw_status.get("conditions") or []
    old = next((c for c in conditions if c.get("type") == "Progressing"), {})
    if old.get("reason") == moved.stalled[0]:
        return ()
    return (("Warning", *moved.stalled),)


def _observed(obs: Observation, moved: Advance, raw_status: Mapping[str, Any]) -> Observation:
    degraded = moved.degraded
    conditions: list[dict[str, Any]] = raw_status.get("conditions") or []
    old = next((c for c in conditions if c.get("type") == "Degraded"), {})
    if degraded is not None and old.get("message") == degraded[1]:
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
    spec: BenchmarkRunSpec, raw_status: Mapping[str, Any], moved: Advance, now: datetime
) -> tuple[dict[str, Any], tuple[Event, ...]]:
    """Progress, per-target results and the step's event: the status beyond the phase."""
    steps_total = len(plan(spec))
    names = [t.name for t in spec.targets]
    targets = target_entries(raw_status.get("targets") or [], names, moved.target)
    extra: dict[str, Any] = {}
    events: tuple[Event, ...] = ()
    if moved.collected is not None and moved.current is not None:
        result = phase_result(moved.current, moved.collected)
        targets = with_result(targets, moved.current, result)
        extra["lastResult"] = last_result(moved.current, moved.collected)
        events = (("Normal", "StepCompleted", step_event(moved.current, moved.collected)),)
    targets, omitted = compacted(targets)
    if omitted:
        extra["resultsOmitted"] = int(raw_status.get("resultsOmitted") or 0) + omitted
    live = moved.step_progress
    progress = progress_block(
        raw_status.get("progress") or {},
        steps_total=steps_total,
        steps_done=moved.steps_done,
        current=moved.current,
        stage=str(moved.stage) if moved.stage else None,
        run_progress=run_progress(
            moved.steps_done,
            steps_total,
            None if live is None else live.percent,
            parse_stamp(raw_status.get("startedAt")),
            now,
        ),
        ops_per_second=None if live is None else live.rate,
        records_per_second=None if live is None else live.records_per_second,
        cold_mark=moved.cold_mark,
    )
    return {**extra, "targets": targets, "progress": progress}, events


# -- ending ----------------------------------------------------------------------


def _conclude(
    p: Pass,
    decision: Decision,
    extra: Mapping[str, Any] | None = None,
    events: tuple[Event, ...] = (),
) -> Outcome:
    """A terminal decision: record it, and remove what the run still runs."""
    # A run that never started (failed in Pending) deployed nothing.
    started = bool(p.raw_status.get("startedAt")) or p.phase is not RunPhase.PENDING
    status = {
        **status_patch(
            p.run, raw_status=p.raw_status, decision=decision, now=p.now, results_path="",
            started=started,
        ),
        **(extra or {}),
    }  # fmt: skip
    progress = dict(status.get("progress") or p.raw_status.get("progress") or {})
    progress.update(stage=None, eta=None, opsPerSecond=None, recordsPerSecond=None)
    if decision.phase is RunPhase.SUCCEEDED:
        progress["percent"] = 100
    status["progress"] = progress
    cleaned = _clean_up(p, p.spec if started else None, decision.phase, {**p.raw_status, **status})
    status.update(cleaned.status)
    return Outcome(status, (*events, *_decision_events(decision), *cleaned.events))


def _ended(p: Pass) -> Outcome:
    """A run that has ended: nothing to do once its children are cleaned up."""
    if p.raw_status.get("cleanedUp"):
        return Outcome()
    return _clean_up(p, p.spec if p.raw_status.get("startedAt") else None, p.phase)


def _clean_up(
    p: Pass, spec: BenchmarkRunSpec | None, phase: RunPhase, status: Mapping[str, Any] | None = None
) -> Outcome:
    """Stop the load and retire the databases of an ended run, and write a failed
    run's summary (retried until done)."""
    run = p.run
    try:
        if spec is not None:
            # Bounded like a pass: a stuck call must not hold the run's timer.
            deadlines.call_within(
                lambda: tearing_down.end_run(
                    run, spec, p.settings, failed=phase is RunPhase.FAILED
                ),
                p.settings.pass_deadline, f"{run.name}-cleanup",
            )  # fmt: skip
    except Exception as exc:  # noqa: BLE001 - retried on the next pass; never escapes
        log.warning("cleanup of %s/%s not finished: %s", run.namespace, run.name, exc)
        return Outcome()
    admitting.release(run)
    if spec is not None and phase is RunPhase.FAILED:
        return _summarized(p, spec, p.raw_status if status is None else status)
    return Outcome({"cleanedUp": True})


def _summarized(p: Pass, spec: BenchmarkRunSpec, status: Mapping[str, Any]) -> Outcome:
    """A failed run's summary.json and report (tried again on later passes for a while)."""
    done, warning = collecting.summarize_ended(p.settings, p.run, spec, status, p.now)
    if not done:
        return Outcome()
    return Outcome({"cleanedUp": True}, () if warning is None else (("Warning", *warning),))


def deleted(run: RunRef, raw_spec: Mapping[str, Any], settings: OperatorSettings) -> None:
    """The run is being deleted: its children in its namespace go with it (owner
    references), but its cache-drop Jobs in the operator's namespace cannot be owned
    by it. Raises to be retried (the run's finalizer holds it until this succeeds)."""
    spec, _ = parse(raw_spec)
    if spec is not None:
        deadlines.call_within(
            lambda: tearing_down.remove_cache_drops(run, spec, settings),
            settings.pass_deadline, f"{run.name}-deleted",
        )  # fmt: skip
    admitting.release(run)


# -- failed passes ---------------------------------------------------------------


def describe_error(exc: BaseException) -> tuple[str, str]:
    """(reason, message) for a condition: names the object, never a credential."""
    if isinstance(exc, KubeError):
        return "KubernetesApiError", str(exc)
    if isinstance(exc, ResultsServiceError):
        return "ResultsServiceError", str(exc)
    if isinstance(exc, PassDeadlineError):
        return "PassTimedOut", f"{exc}: a call to the API server or a database hung"
    if isinstance(exc, LookupError):
        return "SetupError", str(exc)[:600]
    if type(exc).__module__.split(".")[0] in ("mysql", "MySQLdb", "pymongo", "bson", "psycopg"):
        # Driver messages can echo a URI and its password: the type and code only.
        return "DatabaseError", f"database driver error ({driver_error(exc)})"
    log.warning("reconcile pass failed", exc_info=exc)
    return "InternalError", f"{type(exc).__name__}: {scrub(str(exc), 600)}"


def _pass_failed(p: Pass, exc: BaseException) -> Outcome:
    reason, message = describe_error(exc)
    if isinstance(exc, KubeError) and exc.transient:
        return _api_server_busy(p, message)
    count = int(p.raw_status.get("failedPasses") or 0) + 1
    since = parse_stamp(p.raw_status.get("failingSince")) or p.now
    window = (p.now - since).total_seconds()
    if count >= p.settings.pass_error_limit and window >= p.settings.pass_error_window:
        ended = _conclude(p, fail(reason, f"{message} ({count} attempts over {window:.0f}s)"))
        return replace(ended, failed=reason)
    retrying = f"{message} (attempt {count}; retrying)"
    status = {
        "failedPasses": count,
        "failingSince": stamp(since),
        "message": retrying,
        "conditions": _merged(p, p.raw_status, RECONCILED, "False", reason, retrying),
    }
    event: tuple[Event, ...] = (("Warning", reason, retrying),) if count == 1 else ()
    return Outcome(status, event, failed=reason)


def _api_server_busy(p: Pass, message: str) -> Outcome:
    """A throttled or unavailable API server is the cluster's state, not the run's:
    the pass is retried without counting against the failure budget (a busy
    cluster would otherwise fail runs in bulk), and without an Event (which
    would add load). spec.timeout still bounds the run: it is checked before any
    call of a pass."""
    waiting = f"{message} (busy or unavailable API server; retrying, not counted as failed)"
    reason = "ApiServerUnavailable"
    condition = _merged(p, p.raw_status, RECONCILED, "False", reason, waiting)
    return Outcome({"message": waiting, "conditions": condition}, failed=reason)
