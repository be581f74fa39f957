"""The phase state machine: every transition, with no cluster involved."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from dbbench_contract.api.base import Problem
from dbbench_operator.status.lifecycle import (
    ACCEPTED,
    DEGRADED,
    FAILED,
    PROGRESSING,
    RUNNER_SATURATED,
    SUCCEEDED,
    TARGETS_READY,
    Condition,
    Observation,
    RunPhase,
    Stage,
    merge_conditions,
    next_state,
)

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def obs(**kw: object) -> Observation:
    return Observation(now=NOW, **kw)  # type: ignore[arg-type]


def cond(decision_conditions: tuple[Condition, ...], kind: str) -> Condition:
    return next(c for c in decision_conditions if c.type == kind)


def test_valid_pending_run_moves_to_provisioning_and_is_accepted() -> None:
    d = next_state(RunPhase.PENDING, obs())
    assert d is not None
    assert d.phase is RunPhase.PROVISIONING
    assert cond(d.conditions, ACCEPTED).status == "True"
    assert d.event is not None


def test_spec_problem_fails_at_once_naming_the_field() -> None:
    problems = (Problem("spec.timeout", "is shorter than the plan"), Problem("spec.x", "y"))
    d = next_state(RunPhase.PENDING, obs(problems=problems))
    assert d is not None
    assert d.phase is RunPhase.FAILED
    accepted = cond(d.conditions, ACCEPTED)
    assert accepted.status == "False"
    assert accepted.reason == "InvalidSpec"
    assert "spec.timeout" in accepted.message
    assert "1 more" in accepted.message
    assert cond(d.conditions, FAILED).status == "True"
    assert cond(d.conditions, PROGRESSING).status == "False"


@pytest.mark.parametrize("phase", [RunPhase.SUCCEEDED, RunPhase.FAILED])
def test_terminal_runs_are_left_alone(phase: RunPhase) -> None:
    assert next_state(phase, obs(failure=("X", "y"))) is None


def test_a_pending_run_waits_for_its_nodes_without_a_transition() -> None:
    blocked = ("WaitingForNodes", "node n1 in use by BenchmarkRun team/other")
    d = next_state(RunPhase.PENDING, obs(blocked=blocked))
    assert d is not None
    assert d.phase is RunPhase.PENDING
    assert d.event is None
    progressing = cond(d.conditions, PROGRESSING)
    assert (progressing.status, progressing.reason) == ("False", "WaitingForNodes")
    assert "team/other" in progressing.message


def test_provisioning_waits_with_the_reason_given() -> None:
    d = next_state(
        RunPhase.PROVISIONING,
        obs(steps_total=3, stage=Stage.PROVISIONING, reason="WaitingForMembers",
            message="target mongo: 2/3 members", target_ready=False),
    )  # fmt: skip
    assert d is not None
    assert d.phase is RunPhase.PROVISIONING
    assert d.event is None
    ready = cond(d.conditions, TARGETS_READY)
    assert (ready.status, ready.reason, ready.message) == (
        "False", "WaitingForMembers", "target mongo: 2/3 members")  # fmt: skip


def test_a_ready_target_and_a_started_step_is_running() -> None:
    d = next_state(
        RunPhase.PROVISIONING,
        obs(steps_total=3, stage=Stage.RUNNING, reason="StepStarted", target_ready=True),
    )
    assert d is not None
    assert d.phase is RunPhase.RUNNING
    assert d.event == ("StepStarted", "0/3 steps done")
    assert cond(d.conditions, TARGETS_READY).status == "True"


@pytest.mark.parametrize("stage", [Stage.TEARING_DOWN, Stage.PROVISIONING])
def test_the_next_target_being_deployed_shows_as_provisioning_again(stage: Stage) -> None:
    d = next_state(RunPhase.RUNNING, obs(steps_total=4, steps_done=2, stage=stage))
    assert d is not None
    assert d.phase is RunPhase.PROVISIONING
    assert d.event is not None


def test_cooling_is_part_of_running() -> None:
    d = next_state(RunPhase.RUNNING, obs(steps_total=4, steps_done=1, stage=Stage.COOLING,
                                         reason="RestartingDatabase"))  # fmt: skip
    assert d is not None
    assert d.phase is RunPhase.RUNNING
    assert cond(d.conditions, PROGRESSING).reason == "RestartingDatabase"


def test_a_disturbed_step_marks_the_run_degraded_with_a_warning() -> None:
    degraded = ("DatabasePodRestarted", "database pod db-0 restarted during step 2")
    d = next_state(RunPhase.RUNNING, obs(steps_total=4, steps_done=1, stage=Stage.RUNNING,
                                         degraded=degraded))  # fmt: skip
    assert d is not None
    assert d.phase is RunPhase.RUNNING
    assert cond(d.conditions, DEGRADED).status == "True"
    assert d.warning == degraded


def test_a_saturated_runner_gives_the_run_a_warning_condition() -> None:
    saturated = ("RunnerSaturated", "runner saturated: add runner pods or threads (step 2 ...)")
    d = next_state(RunPhase.RUNNING, obs(steps_total=4, steps_done=2, stage=Stage.RUNNING,
                                         saturated=saturated))  # fmt: skip
    assert d is not None
    assert d.phase is RunPhase.RUNNING
    condition = cond(d.conditions, RUNNER_SATURATED)
    assert (condition.status, condition.reason) == ("True", "RunnerSaturated")
    assert condition.message == saturated[1]
    assert d.warning == saturated


def test_running_until_all_steps_done_then_collecting_then_succeeded() -> None:
    d = next_state(RunPhase.RUNNING, obs(steps_total=3, steps_done=2, stage=Stage.RUNNING))
    assert d is not None
    assert d.phase is RunPhase.RUNNING
    d = next_state(RunPhase.RUNNING, obs(steps_total=3, steps_done=3))
    assert d is not None
    assert d.phase is RunPhase.COLLECTING
    d = next_state(RunPhase.COLLECTING, obs(collected=False))
    assert d is not None
    assert d.phase is RunPhase.COLLECTING
    d = next_state(RunPhase.COLLECTING, obs(collected=True))
    assert d is not None
    assert d.phase is RunPhase.SUCCEEDED
    assert cond(d.conditions, SUCCEEDED).status == "True"
    assert cond(d.conditions, PROGRESSING).status == "False"


def test_timeout_fails_any_active_phase() -> None:
    started = NOW - timedelta(hours=3)
    for phase in (RunPhase.PROVISIONING, RunPhase.RUNNING, RunPhase.COLLECTING):
        d = next_state(phase, obs(started_at=started, timeout=timedelta(hours=2)))
        assert d is not None
        assert d.phase is RunPhase.FAILED
        assert cond(d.conditions, FAILED).reason == "Timeout"
        assert "spec.timeout" in cond(d.conditions, FAILED).message


def test_not_yet_timed_out() -> None:
    d = next_state(
        RunPhase.RUNNING,
        obs(
            started_at=NOW - timedelta(minutes=5),
            timeout=timedelta(hours=2),
            steps_total=1,
            stage=Stage.RUNNING,
        ),
    )
    assert d is not None
    assert d.phase is RunPhase.RUNNING


def test_unrecoverable_step_failure_fails_the_run() -> None:
    d = next_state(RunPhase.PROVISIONING, obs(failure=("ExternalUnreachable", "no route")))
    assert d is not None
    assert d.phase is RunPhase.FAILED
    assert cond(d.conditions, FAILED).reason == "ExternalUnreachable"


def test_merge_conditions_keeps_transition_time_when_status_is_unchanged() -> None:
    first = merge_conditions([], [Condition(PROGRESSING, "True", "A", "a")], NOW, 1)
    later = NOW + timedelta(minutes=1)
    second = merge_conditions(first, [Condition(PROGRESSING, "True", "B", "b")], later, 1)
    assert second[0]["lastTransitionTime"] == first[0]["lastTransitionTime"]
    assert second[0]["reason"] == "B"
    third = merge_conditions(second, [Condition(PROGRESSING, "False", "C", "c")], later, 2)
    assert third[0]["lastTransitionTime"] == later.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert third[0]["observedGeneration"] == 2
