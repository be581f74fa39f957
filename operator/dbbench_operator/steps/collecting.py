"""Collecting: a finished step's pods merged on the claim, and at the end the
run's own summary.json next to the steps' directories."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from dbbench_contract import run_summary as rs
from dbbench_contract.api import API_VERSION, BenchmarkRunSpec, BenchmarkRunStatus
from dbbench_contract.api.expectations import ExpectationOutcome
from dbbench_contract.api.status import TargetResult
from dbbench_contract.history import SERIES_LABEL
from dbbench_contract.layout import SUMMARY
from dbbench_contract.summary import StepSummary
from dbbench_operator import deadlines
from dbbench_operator.naming import RunRef
from dbbench_operator.settings import OperatorSettings
from dbbench_operator.specs.plan import Step, plan
from dbbench_operator.specs.runner_job import step_dir
from dbbench_operator.specs.table_state import TableState, table_state
from dbbench_operator.status.expectations import Recent, recent_of
from dbbench_operator.status.lifecycle import CHANGE_POINT, Condition
from dbbench_operator.status.recording import stamp
from dbbench_operator.steps import results_service
from dbbench_operator.steps.outcome import failed_step


def collect_step(
    settings: OperatorSettings, run: RunRef, spec: BenchmarkRunSpec, step: Step
) -> StepSummary:
    """Merge the step's pods (idempotent); the merged summary."""
    return results_service.merge_step(settings, run, step_dir(step), spec.runner.pods)


def table_before(
    settings: OperatorSettings, run: RunRef, spec: BenchmarkRunSpec, steps: Sequence[Step],
    step: Step,
) -> TableState | None:  # fmt: skip
    """What the target's earlier steps wrote, from their merged summaries on the claim."""
    earlier = [
        s
        for s in steps
        if s.target == step.target and s.index < step.index and s.id_mode == step.id_mode
    ]
    merged = {s.index: results_service.step_summary(settings, run, step_dir(s)) for s in earlier}
    return table_state(steps, step, merged, spec.dataset.records)


log = logging.getLogger(__name__)
# How long an ended run's summary.json is retried (the results service may be
# restarting) before cleanup goes on without it, with a Warning event.
SUMMARY_GRACE_S = 600.0


@dataclass(frozen=True)
class Ending:
    """How a run ended, for its summary: phase, the Failed condition's reason and
    message, and the step (1-based) it was at."""

    phase: str = "Succeeded"
    reason: str | None = None
    message: str | None = None
    current_step: int | None = None
    # Each bound of spec.expectations as judged (status.expectations).
    expectations: tuple[ExpectationOutcome, ...] = ()


def build_run_summary(
    run: RunRef,
    spec: BenchmarkRunSpec,
    steps: Sequence[Step],
    merged: Mapping[int, StepSummary],
    *,
    started_at: datetime | None,
    completed_at: datetime,
    status_targets: Sequence[TargetResult],
    ending: Ending | None = None,
) -> rs.RunSummary:
    """summary.json at the run's root: what ran, in which order, with what result,
    and how the run ended (pure). Steps without a merged summary have no result."""
    ending = ending or Ending()
    return rs.RunSummary(
        api_version=API_VERSION,
        series=run.series,
        run=rs.RunMeta(
            namespace=run.namespace,
            name=run.name,
            uid=run.uid,
            started_at=None if started_at is None else stamp(started_at),
            completed_at=stamp(completed_at),
            phase=ending.phase,
            reason=ending.reason,
            message=ending.message,
            current_step=ending.current_step,
        ),
        # Every default explicit: readers need not know the API's defaults.
        spec=spec,
        steps=tuple(
            rs.StepEntry(
                step=s.index + 1,
                target=s.target,
                phase=s.phase,
                repeat=s.repeat,
                type=s.phase_type,
                path=step_dir(s),
                result=rs.step_result(s.phase, s.repeat, merged[s.index])
                if s.index in merged
                else None,
            )
            for s in steps
        ),
        targets=tuple(
            rs.TargetEntry(
                name=t.name,
                endpoint=t.endpoint,
                server_version=t.server_version,
                shard_key=t.shard_key,
            )
            for t in status_targets
        ),
        expectations=ending.expectations,
    )


def write_run_summary(
    settings: OperatorSettings,
    run: RunRef,
    spec: BenchmarkRunSpec,
    steps: Sequence[Step],
    *,
    started_at: datetime | None,
    now: datetime,
    status_targets: Sequence[TargetResult],
    ending: Ending | None = None,
    succeeded: Mapping[int, StepSummary] | None = None,
) -> tuple[str, str] | None:
    """Upload the run's summary.json (the service renders the report from it).

    A succeeded run has every step merged (a missing one is an error); a failed
    run lists what it merged, up to the step it was at, and the rest without a
    result. A run about to succeed with a step whose merged summary failed does
    not: nothing is written, and the (reason, message) naming that step is
    returned for the run to fail on (its failed summary is written then).
    `succeeded`: the merged summaries, when the caller has read them already."""
    if ending is None or ending.phase == "Succeeded":
        merged = dict(succeeded or merged_steps(settings, run, steps))
        failed = first_failed(steps, merged)
        if failed is not None:
            return failed
    else:
        last = ending.current_step or len(steps)
        found = {s.index: results_service.stored_step_summary(settings, run, step_dir(s))
                 for s in steps if s.index < last}  # fmt: skip
        merged = {index: summary for index, summary in found.items() if summary is not None}
    document = build_run_summary(
        run, spec, steps, merged, started_at=started_at,
        completed_at=now, status_targets=status_targets,
        ending=ending,
    )  # fmt: skip
    results_service.put_file(
        settings, run, SUMMARY, json.dumps(document.to_wire(), indent=1).encode()
    )
    return None


def merged_steps(
    settings: OperatorSettings, run: RunRef, steps: Sequence[Step]
) -> dict[int, StepSummary]:
    """Every step's merged summary, by step index (a missing one is an error)."""
    return {s.index: results_service.step_summary(settings, run, step_dir(s)) for s in steps}


def first_failed(
    steps: Sequence[Step], merged: Mapping[int, StepSummary]
) -> tuple[str, str] | None:
    """(reason, message) naming the first step whose merged summary failed."""
    return next((f for s in steps if (f := failed_step(s, merged[s.index]))), None)


def ending_of(status: BenchmarkRunStatus) -> Ending:
    """How the run ended, read from its status (pure)."""
    failed = next((c for c in status.conditions if c.type == "Failed"), None)
    step = status.progress.step if status.progress else None
    return Ending(
        phase=status.phase or "Failed",
        reason=None if failed is None else failed.reason,
        message=(None if failed is None else failed.message) or status.message,
        current_step=step or None,
        expectations=tuple(status.expectations or ()),
    )


def write_ended_summary(
    settings: OperatorSettings,
    run: RunRef,
    spec: BenchmarkRunSpec,
    status: BenchmarkRunStatus,
    now: datetime,
) -> None:
    """A failed or timed-out run's summary.json: the steps it completed, the rest
    without a result, and why it ended; the service renders its report from it."""
    write_run_summary(
        settings, run, spec, plan(spec), started_at=status.started_at, now=now,
        status_targets=status.targets, ending=ending_of(status),
    )  # fmt: skip


def summarize_ended(
    settings: OperatorSettings,
    run: RunRef,
    spec: BenchmarkRunSpec,
    status: BenchmarkRunStatus,
    now: datetime,
) -> tuple[bool, tuple[str, str] | None]:
    """`write_ended_summary`, bounded like a pass. (done, warning): not done while the
    results service cannot take it, for SUMMARY_GRACE_S after the run ended; then
    done without it, with a (reason, message) worth a Warning event."""
    try:
        deadlines.call_within(
            lambda: write_ended_summary(settings, run, spec, status, now),
            settings.pass_deadline, f"{run.name}-summary",
        )  # fmt: skip
    except (results_service.ResultsServiceError, deadlines.PassDeadlineError) as exc:
        since = status.completed_at or now
        waited = (now - since).total_seconds()
        if waited < SUMMARY_GRACE_S:
            log.warning("summary of ended run %s/%s not written yet: %s", run.namespace,
                        run.name, exc)  # fmt: skip
            return False, None
        return True, (
            "RunSummaryNotWritten",
            f"the run's summary.json and report were not written in {waited:.0f}s: {exc}"[:600],
        )
    return True, None


# -- the run judged against its series ------------------------------------------------

# The condition's status: True when a change point starts at the run.
_CHANGE_STATUS = {"Regression": "True", "Improvement": "True", "NoChange": "False"}
CONDITION_MESSAGE = 600


@dataclass(frozen=True)
class Judged:
    """The run's ChangePoint verdict: its condition, its Event, and its series."""

    reason: str
    message: str
    series: str | None = None

    @property
    def condition(self) -> Condition:
        status = _CHANGE_STATUS.get(self.reason, "Unknown")
        return Condition(CHANGE_POINT, status, self.reason, self.message[:CONDITION_MESSAGE])

    @property
    def event(self) -> tuple[str, str, str]:
        kind = "Warning" if self.reason == "Regression" else "Normal"
        return kind, self.reason, self.message[:CONDITION_MESSAGE]

    @property
    def change(self) -> str | None:
        """Regression or Improvement: a change point at this run (the operator counts it)."""
        return self.reason if self.reason in ("Regression", "Improvement") else None


def judge_run(settings: OperatorSettings, run: RunRef) -> Judged:
    """Ask the results service for the run's verdict, its summary being stored.
    Never raises: a run without a series, or a service that cannot answer, is
    NotJudged with the reason (the run's own outcome does not depend on it)."""
    if run.series is None:
        return Judged("NotJudged", f"the run has no {SERIES_LABEL} label: it belongs to no series")
    try:
        verdict = results_service.series_verdict(settings, run, run.series)
    except results_service.ResultsServiceError as exc:
        log.warning("verdict on %s/%s not given: %s", run.namespace, run.name, exc)
        return Judged("NotJudged", f"the results service did not judge the run: {exc}",
                      run.series)  # fmt: skip
    if verdict is None or (verdict.uid is not None and verdict.uid != run.uid):
        return Judged("NotJudged", f"the run has no figures in series {run.series!r}'s index "
                      "(no succeeded step)", run.series)  # fmt: skip
    return Judged(verdict.reason, verdict.message, run.series)


def recent_figures(
    settings: OperatorSettings, run: RunRef, spec: BenchmarkRunSpec
) -> Recent | None:
    """The series' recent figures a tolerance compares the run with; None when no
    expectation has a tolerance, the run has no series, or the service cannot say
    (its tolerances are then NotJudged: never raises)."""
    if run.series is None or not any(e.tolerance for e in spec.expectations or ()):
        return None
    try:
        history = results_service.series_history(settings, run.namespace, run.series)
    except results_service.ResultsServiceError as exc:
        log.warning("series %s/%s not read for %s's tolerances: %s", run.namespace,
                    run.series, run.name, exc)  # fmt: skip
        return None
    return recent_of(history, run.uid)
