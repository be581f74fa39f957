"""One reconciliation pass of a run: observe, decide (pure), and describe the status.

Everything is re-derived from the spec, the cluster and the databases on every
pass; the status is an output, never trusted as input beyond the phase and the
start time. A restarted operator therefore resumes where the run stands.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from dbbench_operator import provisioning
from dbbench_operator.lifecycle import (
    TERMINAL,
    Decision,
    Observation,
    RunPhase,
    merge_conditions,
    next_state,
)
from dbbench_operator.model import BenchmarkRunSpec, SpecError, parse_spec
from dbbench_operator.model.base import Problem
from dbbench_operator.model.semantics import check
from dbbench_operator.model.units import parse_duration
from dbbench_operator.naming import RunRef
from dbbench_operator.planning import plan

TIMESTAMP = "%Y-%m-%dT%H:%M:%SZ"


@dataclass(frozen=True)
class Outcome:
    """What one pass wants recorded: a status patch and events to post."""

    status: dict[str, Any] = field(default_factory=dict)
    events: tuple[tuple[str, str, str], ...] = ()  # (type Normal|Warning, reason, message)


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


def _started_at(raw_status: Mapping[str, Any]) -> datetime | None:
    text = raw_status.get("startedAt")
    if not text:
        return None
    return datetime.strptime(str(text), TIMESTAMP).replace(tzinfo=UTC)


def observe(
    run: RunRef,
    *, phase: RunPhase, raw_status: Mapping[str, Any], now: datetime,
    spec: BenchmarkRunSpec | None, problems: tuple[Problem, ...],
) -> tuple[Observation, list[dict[str, Any]]]:  # fmt: skip
    """What this pass sees; performs the phase's idempotent work on the way."""
    obs = Observation(now=now, started_at=_started_at(raw_status), problems=problems)
    if spec is None or problems:
        return obs, []
    obs = replace(obs, timeout=timedelta(seconds=parse_duration(spec.timeout)))
    steps = plan(spec)
    obs = replace(obs, steps_total=len(steps), targets_total=len(spec.targets))
    if phase is RunPhase.PROVISIONING:
        seen = provisioning.provision(run, spec, steps)
        obs = replace(
            obs,
            targets_ready=seen.ready,
            waiting_reason=seen.reason,
            waiting_message=seen.message,
            failure=seen.failure,
        )
        return obs, seen.target_status
    if phase is RunPhase.RUNNING:
        # Runner Jobs come with the runner-orchestration issue; until then a run
        # waits here, visibly, instead of pretending to have measured anything.
        obs = replace(
            obs,
            steps_done=0,
            waiting_reason="RunnerNotAvailable",
            waiting_message="runner orchestration is not part of this operator version yet",
        )
    return obs, []


def status_patch(
    run: RunRef,
    *, raw_status: Mapping[str, Any], decision: Decision, now: datetime,
    targets: list[dict[str, Any]], steps_total: int,
) -> dict[str, Any]:  # fmt: skip
    stamp = now.strftime(TIMESTAMP)
    status: dict[str, Any] = {
        "phase": str(decision.phase),
        "observedGeneration": run.generation,
        "conditions": merge_conditions(
            raw_status.get("conditions") or [], decision.conditions, now, run.generation
        ),
    }
    status["message"] = next(
        (c.message for c in decision.conditions if c.type in ("Failed", "Progressing")), ""
    )
    if not raw_status.get("startedAt"):
        status["startedAt"] = stamp
    if decision.phase in TERMINAL:
        status["completedAt"] = stamp
    if targets:
        status["targets"] = targets
    if steps_total:
        status["progress"] = {**(raw_status.get("progress") or {}), "steps": steps_total}
    return status


def reconcile(
    run: RunRef, raw_spec: Mapping[str, Any], raw_status: Mapping[str, Any], now: datetime
) -> Outcome:
    phase = current_phase(raw_status)
    if phase in TERMINAL:
        return Outcome()
    spec, problems = parse(raw_spec)
    obs, targets = observe(
        run, phase=phase, raw_status=raw_status, now=now, spec=spec, problems=problems
    )
    decision = next_state(phase, obs)
    if decision is None:
        return Outcome()
    events: tuple[tuple[str, str, str], ...] = ()
    if decision.event is not None:
        kind = "Warning" if decision.phase is RunPhase.FAILED else "Normal"
        events = ((kind, *decision.event),)
    status = status_patch(
        run, raw_status=raw_status, decision=decision, now=now, targets=targets,
        steps_total=obs.steps_total,
    )  # fmt: skip
    return Outcome(status, events)
