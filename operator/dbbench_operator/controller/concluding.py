"""How a pass ends: a run's terminal decision recorded and its children removed,
or a failed pass counted (or, when the API server was busy, not counted).

Failed passes are retried; after `pass_error_limit` in a row over
`pass_error_window` seconds the run fails with the last error's reason. A
throttled or unavailable API server is the cluster's state, not the run's: it
never counts, and the pass says how long to back off (`Outcome.retry_after`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import astuple, dataclass, field, replace
from datetime import datetime
from typing import Any

from dbbench_contract.api import BenchmarkRunSpec, BenchmarkRunStatus
from dbbench_contract.api.base import Problem
from dbbench_operator import deadlines
from dbbench_operator.controller import admission
from dbbench_operator.deadlines import PassDeadlineError
from dbbench_operator.k8s.api import KubeError
from dbbench_operator.naming import RunRef
from dbbench_operator.redaction import driver_error, scrub
from dbbench_operator.settings import OperatorSettings
from dbbench_operator.status.lifecycle import (
    CHANGE_POINT,
    RECONCILED,
    Condition,
    Decision,
    RunPhase,
    fail,
    merge_conditions,
)
from dbbench_operator.status.recording import (
    as_patch,
    read_status,
    stamp,
    status_patch,
    without_none,
)
from dbbench_operator.steps import collecting
from dbbench_operator.steps.results_service import ResultsServiceError
from dbbench_operator.targets import teardown

log = logging.getLogger(__name__)

Event = tuple[str, str, str]  # (Normal|Warning, reason, message)


@dataclass(frozen=True)
class Pass:
    """The inputs of one pass, read once."""

    run: RunRef
    status: BenchmarkRunStatus  # as the pass found it
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
    # The API server was busy (429, 5xx, no answer): back off, this long if it said so.
    busy: bool = False
    retry_after: float | None = None
    # Regression or Improvement: the run's verdict found a change point at it
    # (counted on /metrics once the status carrying it is written).
    change_point: str | None = None


def merged(p: Pass, existing: Sequence[Mapping[str, Any]], *condition: str) -> list[dict[str, Any]]:
    """`existing` conditions (a patch's) with one set."""
    return merge_conditions(existing, [Condition(*condition)], p.now, p.run.generation)


def _found(p: Pass) -> list[dict[str, Any]]:
    """The conditions as the pass found them, as a patch starts from them."""
    return [as_patch(c) for c in p.status.conditions]


def decision_events(decision: Decision) -> tuple[Event, ...]:
    events: list[Event] = []
    if decision.event is not None:
        kind = "Warning" if decision.phase is RunPhase.FAILED else "Normal"
        events.append((kind, *decision.event))
    if decision.warning is not None:
        events.append(("Warning", *decision.warning))
    return tuple(events)


# -- ending ----------------------------------------------------------------------


def conclude(
    p: Pass,
    decision: Decision,
    extra: Mapping[str, Any] | None = None,
    events: tuple[Event, ...] = (),
) -> Outcome:
    """A terminal decision: record it, and remove what the run still runs."""
    # A run that never started (failed in Pending) deployed nothing.
    started = p.status.started_at is not None or p.phase is not RunPhase.PENDING
    status = {
        **status_patch(
            p.run, status=p.status, decision=decision, now=p.now, results_path="",
            started=started,
        ),
        **(extra or {}),
    }  # fmt: skip
    progress = dict(status["progress"] if "progress" in status else as_patch(p.status.progress))
    progress.update(stage=None, eta=None, opsPerSecond=None, recordsPerSecond=None)
    if decision.phase is RunPhase.SUCCEEDED:
        progress["percent"] = 100
    status["progress"] = progress
    # The status as this pass leaves it: what a failed run's summary says.
    after = read_status(without_none({**as_patch(p.status), **status}))
    cleaned = clean_up(p, p.spec if started else None, decision.phase, after)
    status.update(cleaned.status)
    change = next((c.reason for c in decision.conditions
                   if c.type == CHANGE_POINT and c.status == "True"), None)  # fmt: skip
    return Outcome(status, (*events, *decision_events(decision), *cleaned.events),
                   change_point=cleaned.change_point or change)  # fmt: skip


def ended(p: Pass) -> Outcome:
    """A run that has ended: nothing to do once its children are cleaned up."""
    if p.status.cleaned_up:
        return Outcome()
    return clean_up(p, p.spec if p.status.started_at is not None else None, p.phase)


def clean_up(
    p: Pass,
    spec: BenchmarkRunSpec | None,
    phase: RunPhase,
    status: BenchmarkRunStatus | None = None,
) -> Outcome:
    """Stop the load and retire the databases of an ended run, and write a failed
    run's summary (retried until done)."""
    run = p.run
    try:
        if spec is not None:
            # Bounded like a pass: a stuck call must not hold the run's loop.
            deadlines.call_within(
                lambda: teardown.end_run(
                    run, spec, p.settings, failed=phase is RunPhase.FAILED
                ),
                p.settings.pass_deadline, f"{run.name}-cleanup",
            )  # fmt: skip
    except Exception as exc:  # noqa: BLE001 - retried on the next pass; never escapes
        log.warning("cleanup of %s/%s not finished: %s", run.namespace, run.name, exc)
        return Outcome()
    admission.release(run)
    if spec is not None and phase is RunPhase.FAILED:
        return summarized(p, spec, p.status if status is None else status)
    return Outcome({"cleanedUp": True})


def summarized(p: Pass, spec: BenchmarkRunSpec, status: BenchmarkRunStatus) -> Outcome:
    """A failed run's summary.json and report (tried again on later passes for a
    while), and its verdict against its series (its succeeded steps are indexed)."""
    done, warning = collecting.summarize_ended(p.settings, p.run, spec, status, p.now)
    if not done:
        return Outcome()
    if warning is None:
        judged = collecting.judge_run(p.settings, p.run)
    else:
        judged = collecting.Judged("NotJudged", "the run's summary.json was not stored")
    conditions = merged(p, [as_patch(c) for c in status.conditions], *astuple(judged.condition))
    events = (judged.event,) if warning is None else (("Warning", *warning), judged.event)
    return Outcome({"cleanedUp": True, "conditions": conditions}, events,
                   change_point=judged.change)  # fmt: skip


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


def pass_failed(p: Pass, exc: BaseException) -> Outcome:
    reason, message = describe_error(exc)
    if isinstance(exc, KubeError) and exc.transient:
        return api_server_busy(p, message, exc.retry_after)
    count = (p.status.failed_passes or 0) + 1
    since = p.status.failing_since or p.now
    window = (p.now - since).total_seconds()
    if count >= p.settings.pass_error_limit and window >= p.settings.pass_error_window:
        ended = conclude(p, fail(reason, f"{message} ({count} attempts over {window:.0f}s)"))
        return replace(ended, failed=reason)
    retrying = f"{message} (attempt {count}; retrying)"
    status = {
        "failedPasses": count,
        "failingSince": stamp(since),
        "message": retrying,
        "conditions": merged(p, _found(p), RECONCILED, "False", reason, retrying),
    }
    event: tuple[Event, ...] = (("Warning", reason, retrying),) if count == 1 else ()
    return Outcome(status, event, failed=reason)


def api_server_busy(p: Pass, message: str, retry_after: float | None = None) -> Outcome:
    """A throttled or unavailable API server is the cluster's state, not the run's:
    the pass is retried without counting against the failure budget (a busy
    cluster would otherwise fail runs in bulk), and without an Event (which
    would add load). spec.timeout still bounds the run: it is checked before any
    call of a pass. The next pass waits `retry_after` when the server said so
    (`controller/pass_timing`)."""
    waiting = f"{message} (busy or unavailable API server; retrying, not counted as failed)"
    reason = "ApiServerUnavailable"
    condition = merged(p, _found(p), RECONCILED, "False", reason, waiting)
    return Outcome(
        {"message": waiting, "conditions": condition}, failed=reason, busy=True,
        retry_after=retry_after,
    )  # fmt: skip
