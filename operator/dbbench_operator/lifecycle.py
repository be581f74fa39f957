"""The run's phase state machine, as pure functions.

Pending -> Provisioning -> Running -> Collecting -> Succeeded, and Failed from
any non-terminal phase. Handlers observe the cluster, describe what they saw as
an ``Observation`` and ask ``next_state`` what to record; nothing here performs
I/O or reads the clock, so every transition is unit-tested.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from dbbench_operator.model.base import Problem


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
TARGETS_READY = "TargetsReady"  # every database under test is deployed and set up
PROGRESSING = "Progressing"  # the run is doing work (False once it has ended)
SUCCEEDED = "Succeeded"
FAILED = "Failed"


@dataclass(frozen=True)
class Observation:
    """What the operator saw on this pass. Absent knowledge stays ``None``."""

    now: datetime
    started_at: datetime | None = None
    timeout: timedelta | None = None
    problems: Sequence[Problem] = ()
    targets_ready: int | None = None
    targets_total: int = 0
    waiting_reason: str = ""
    waiting_message: str = ""
    steps_done: int | None = None
    steps_total: int = 0
    collected: bool = False
    failure: tuple[str, str] | None = None  # (reason, message) from a step that cannot recover


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


def _fail(reason: str, message: str) -> Decision:
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
    decision = _fail("InvalidSpec", message)
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


def next_state(current: RunPhase, obs: Observation) -> Decision | None:
    """The decision for this pass, or None when a terminal run has nothing to do."""
    if current in TERMINAL:
        return None
    if obs.failure is not None:
        return _fail(*obs.failure)
    if timed_out(obs):
        return _fail("Timeout", f"spec.timeout {obs.timeout} exceeded; increase spec.timeout")
    return _STEPS[current](obs)


def _pending(obs: Observation) -> Decision:
    invalid = validate(obs)
    if invalid is not None:
        return invalid
    accepted = Condition(ACCEPTED, "True", "SpecValid", "spec passed the operator's checks")
    return _move(
        RunPhase.PROVISIONING, "Provisioning", "deploying the databases under test", accepted
    )


def _provisioning(obs: Observation) -> Decision:
    ready, total = obs.targets_ready or 0, obs.targets_total
    if total and ready >= total:
        cond = Condition(TARGETS_READY, "True", "AllTargetsReady", f"{ready}/{total} targets ready")
        return _move(RunPhase.RUNNING, "Running", "running the benchmark steps", cond)
    reason = obs.waiting_reason or "WaitingForTargets"
    message = obs.waiting_message or f"{ready}/{total} targets ready"
    return _stay(
        RunPhase.PROVISIONING, reason, message, Condition(TARGETS_READY, "False", reason, message)
    )


def _running(obs: Observation) -> Decision:
    done, total = obs.steps_done or 0, obs.steps_total
    if total and done >= total:
        return _move(RunPhase.COLLECTING, "Collecting", "merging runner results")
    reason = obs.waiting_reason or "RunningSteps"
    message = obs.waiting_message or f"{done}/{total} steps done"
    return _stay(RunPhase.RUNNING, reason, message)


def _collecting(obs: Observation) -> Decision:
    if not obs.collected:
        return _stay(RunPhase.COLLECTING, "Collecting", "merging runner results")
    message = "all steps done and results collected"
    return Decision(
        RunPhase.SUCCEEDED,
        (
            Condition(SUCCEEDED, "True", "Completed", message),
            Condition(PROGRESSING, "False", "Completed", message),
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
        changed = old is None or old.get("status") != cond.status
        by_type[cond.type] = {
            "type": cond.type,
            "status": cond.status,
            "reason": cond.reason,
            "message": cond.message,
            "observedGeneration": generation,
            "lastTransitionTime": stamp if changed else old["lastTransitionTime"],  # type: ignore[index]
        }
    return sorted(by_type.values(), key=lambda c: str(c["type"]))


_STEPS = {
    RunPhase.PENDING: _pending,
    RunPhase.PROVISIONING: _provisioning,
    RunPhase.RUNNING: _running,
    RunPhase.COLLECTING: _collecting,
}
