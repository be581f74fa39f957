"""The run's phase state machine, as pure functions.

Pending -> Provisioning -> Running -> Collecting -> Succeeded, and Failed from
any non-terminal phase. Targets are benchmarked one after another, so a run
with several targets goes back to Provisioning while the next one is deployed.
Handlers observe the cluster, describe what they saw as an ``Observation`` and
ask ``next_state`` what to record; nothing here performs I/O or reads the
clock, so every transition is unit-tested.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from dbbench_contract.api.base import Problem


class RunPhase(StrEnum):
    PENDING = "Pending"
    PROVISIONING = "Provisioning"
    RUNNING = "Running"
    COLLECTING = "Collecting"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


TERMINAL = frozenset({RunPhase.SUCCEEDED, RunPhase.FAILED})

# Condition types, Kubernetes style: each says one thing about the run.
ACCEPTED = "Accepted"  # the spec passed the operator's semantic checks
TARGETS_READY = "TargetsReady"  # the target being benchmarked is deployed and set up
PROGRESSING = "Progressing"  # the run is doing work (False once it has ended)
DEGRADED = "Degraded"  # something disturbed a measurement (a database pod restarted)
RUNNER_SATURATED = "RunnerSaturated"  # a step's runner pods were CPU-bound
RECONCILED = "Reconciled"  # the last pass worked (False: it failed and will be retried)
SUCCEEDED = "Succeeded"
# The run judged against its series once its summary is stored: Regression,
# Improvement, NoChange or NotJudged (docs/api.md, docs/results.md).
CHANGE_POINT = "ChangePoint"
FAILED = "Failed"


class Stage(StrEnum):
    """What the current step is doing; the first two show as run phase Provisioning."""

    TEARING_DOWN = "TearingDown"
    PROVISIONING = "Provisioning"
    COOLING = "Cooling"
    RUNNING = "Running"
    COLLECTED = "Collected"


@dataclass(frozen=True)
class Observation:
    """What the operator saw on this pass. Absent knowledge stays ``None``."""

    now: datetime
    started_at: datetime | None = None
    timeout: timedelta | None = None
    problems: Sequence[Problem] = ()
    blocked: tuple[str, str] | None = None  # (reason, message): why a Pending run waits
    steps_total: int = 0
    steps_done: int = 0
    stage: Stage | None = None
    reason: str = ""  # what the stage is doing or waiting for
    message: str = ""
    target_ready: bool | None = None
    failure: tuple[str, str] | None = None  # (reason, message) from a step that cannot recover
    degraded: tuple[str, str] | None = None  # newly seen this pass
    saturated: tuple[str, str] | None = None  # a step collected this pass was client-bound
    collected: bool = False
    # The Expectations condition, once the run's last step is collected and judged.
    expectations: Condition | None = None
    change_point: Condition | None = None  # the run's verdict, once its summary is stored


@dataclass(frozen=True)
class Condition:
    type: str
    status: str  # "True" | "False" | "Unknown"
    reason: str
    message: str


@dataclass(frozen=True)
class Decision:
    """The phase to record and the conditions that explain it."""

    phase: RunPhase
    conditions: tuple[Condition, ...] = field(default_factory=tuple)
    event: tuple[str, str] | None = None  # (reason, message) worth an Event: a transition
    warning: tuple[str, str] | None = None  # (reason, message) worth a Warning event


def fail(reason: str, message: str) -> Decision:
    return Decision(
        RunPhase.FAILED,
        (
            Condition(FAILED, "True", reason, message),
            Condition(PROGRESSING, "False", reason, message),
        ),
        event=(reason, message),
    )


def _stay(phase: RunPhase, reason: str, message: str, *extra: Condition) -> Decision:
    return Decision(phase, (Condition(PROGRESSING, "True", reason, message), *extra))


def _move(phase: RunPhase, reason: str, message: str, *extra: Condition) -> Decision:
    return Decision(
        phase, (Condition(PROGRESSING, "True", reason, message), *extra), event=(reason, message)
    )


def validate(obs: Observation) -> Decision | None:
    """A spec problem fails the run at once: retrying cannot fix a spec."""
    if not obs.problems:
        return None
    first = obs.problems[0]
    more = f" (and {len(obs.problems) - 1} more problems)" if len(obs.problems) > 1 else ""
    message = f"{first.field}: {first.message}{more}"
    decision = fail("InvalidSpec", message)
    return Decision(
        decision.phase,
        (Condition(ACCEPTED, "False", "InvalidSpec", message), *decision.conditions),
        decision.event,
    )


def timed_out(obs: Observation) -> bool:
    return (
        obs.started_at is not None
        and obs.timeout is not None
        and obs.now - obs.started_at > obs.timeout
    )


def timeout_decision(timeout: timedelta) -> Decision:
    return fail("Timeout", f"spec.timeout ({timeout}) exceeded; increase spec.timeout")


def next_state(current: RunPhase, obs: Observation) -> Decision | None:
    """The decision for this pass, or None when a terminal run has nothing to do."""
    decision = _next_state(current, obs)
    if decision is None or obs.expectations is None or decision.phase not in TERMINAL:
        return decision
    conditions = (*decision.conditions, obs.expectations)
    return Decision(decision.phase, conditions, decision.event, decision.warning)


def _next_state(current: RunPhase, obs: Observation) -> Decision | None:
    if current in TERMINAL:
        return None
    if timed_out(obs):
        assert obs.timeout is not None
        return timeout_decision(obs.timeout)
    invalid = validate(obs)
    if invalid is not None:
        return invalid
    if obs.failure is not None:
        return fail(*obs.failure)
    return _STEPS[current](obs)


def _pending(obs: Observation) -> Decision:
    if obs.blocked is not None:
        reason, message = obs.blocked
        return Decision(RunPhase.PENDING, (Condition(PROGRESSING, "False", reason, message),))
    accepted = Condition(ACCEPTED, "True", "SpecValid", "spec passed the operator's checks")
    return _move(RunPhase.PROVISIONING, "Provisioning", "deploying the first target", accepted)


def _working(current: RunPhase, obs: Observation) -> Decision:
    """Provisioning and Running: the phase follows what the current step is doing."""
    if obs.steps_total and obs.steps_done >= obs.steps_total:
        return _move(RunPhase.COLLECTING, "Collecting", "writing the run's summary")
    waiting_for_target = obs.stage in (Stage.TEARING_DOWN, Stage.PROVISIONING)
    phase = RunPhase.PROVISIONING if waiting_for_target else RunPhase.RUNNING
    reason = obs.reason or str(obs.stage or "Working")
    message = obs.message or f"{obs.steps_done}/{obs.steps_total} steps done"
    extra: list[Condition] = []
    if obs.target_ready is not None:
        status = "True" if obs.target_ready else "False"
        ready_reason = "TargetReady" if obs.target_ready else reason
        extra.append(Condition(TARGETS_READY, status, ready_reason, message))
    if obs.degraded is not None:
        extra.append(Condition(DEGRADED, "True", *obs.degraded))
    if obs.saturated is not None:
        extra.append(Condition(RUNNER_SATURATED, "True", *obs.saturated))
    decision = (_move if phase is not current else _stay)(phase, reason, message, *extra)
    warning = obs.degraded or obs.saturated
    if warning is not None:
        return Decision(decision.phase, decision.conditions, decision.event, warning)
    return decision


def _collecting(obs: Observation) -> Decision:
    if not obs.collected:
        return _stay(RunPhase.COLLECTING, "Collecting", "writing the run's summary")
    message = "all steps done and results collected"
    judged = () if obs.change_point is None else (obs.change_point,)
    return Decision(
        RunPhase.SUCCEEDED,
        (
            Condition(SUCCEEDED, "True", "Completed", message),
            Condition(PROGRESSING, "False", "Completed", message),
            *judged,
        ),
        event=("Completed", message),
    )


def merge_conditions(
    existing: Sequence[Mapping[str, Any]],
    updates: Sequence[Condition],
    now: datetime,
    generation: int,
) -> list[dict[str, Any]]:
    """Apply updates; lastTransitionTime changes only when a condition's status does."""
    by_type: dict[str, dict[str, Any]] = {str(c["type"]): dict(c) for c in existing}
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    for cond in updates:
        old = by_type.get(cond.type)
        changed = old is None or old["status"] != cond.status
        by_type[cond.type] = {
            "type": cond.type,
            "status": cond.status,
            "reason": cond.reason,
            "message": cond.message,
            "observedGeneration": generation,
            "lastTransitionTime": stamp if changed else old["lastTransitionTime"],  # type: ignore[index]
        }
    return sorted(by_type.values(), key=lambda c: str(c["type"]))


_STEPS: dict[RunPhase, Callable[[Observation], Decision]] = {
    RunPhase.PENDING: _pending,
    RunPhase.PROVISIONING: lambda obs: _working(RunPhase.PROVISIONING, obs),
    RunPhase.RUNNING: lambda obs: _working(RunPhase.RUNNING, obs),
    RunPhase.COLLECTING: _collecting,
}
