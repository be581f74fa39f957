"""When a run's next pass is due (`controller/pass_timing`), events on and timer alone."""

from __future__ import annotations

from typing import Any

import pytest

from dbbench_operator.controller.pass_timing import (
    MIN_GAP_S,
    backoff,
    next_wait,
    stretched,
    waits_for_nodes,
)
from dbbench_operator.k8s.api import KubeError
from dbbench_operator.settings import OperatorSettings

EVENTS = OperatorSettings(reconcile_interval=5, resync_interval=60, progress_interval=15)
TIMER = OperatorSettings(reconcile_interval=5, events=False)


def status(phase: str, reason: str, stage: str | None = None) -> dict[str, Any]:
    return {
        "phase": phase,
        "conditions": [{"type": "Progressing", "status": "True", "reason": reason}],
        "progress": {"stage": stage},
    }


WAITING_FOR_NODES = status("Pending", "WaitingForNodes")
RUNNING_STEP = status("Running", "RunningStep", "Running")
WAITING_FOR_PODS = status("Provisioning", "ContainersNotReady", "Provisioning")
SETTING_UP = status("Provisioning", "WaitingForMembers", "Provisioning")


@pytest.mark.parametrize(
    ("run", "seconds"),
    [(WAITING_FOR_NODES, 60), (RUNNING_STEP, 15), (WAITING_FOR_PODS, 5), (SETTING_UP, 5),
     ({}, 5)],
    ids=["waiting-for-nodes", "running-step", "waiting-for-pods", "setting-up", "new"],
)  # fmt: skip
def test_with_events_quiet_waits_are_a_safety_net_and_the_rest_is_polled(
    run: dict[str, Any], seconds: float
) -> None:
    wait = next_wait(run, EVENTS)
    assert wait.seconds == seconds
    assert wait.wakeable


@pytest.mark.parametrize("run", [WAITING_FOR_NODES, RUNNING_STEP, WAITING_FOR_PODS, {}])
def test_with_the_timer_alone_every_run_is_polled_at_the_old_interval(run: dict[str, Any]) -> None:
    wait = next_wait(run, TIMER)
    assert wait.seconds == 5
    assert not wait.wakeable


def test_no_wait_outlasts_spec_timeout() -> None:
    assert next_wait(RUNNING_STEP, EVENTS, seconds_left=3).seconds == 4  # 1 s past it
    assert next_wait(RUNNING_STEP, EVENTS, seconds_left=-20).seconds == 1


def test_a_busy_api_server_backs_off_doubling_or_as_long_as_it_asked() -> None:
    waits = [next_wait(RUNNING_STEP, EVENTS, busy_passes=n).seconds for n in range(1, 7)]
    assert waits == [5, 10, 20, 40, 60, 60]  # capped at the resync interval
    asked = next_wait(RUNNING_STEP, EVENTS, busy_passes=1, retry_after=30)
    assert asked.seconds == 30
    assert not asked.wakeable  # changes of the children do not cut a back-off short
    assert backoff(TIMER, 1, None) == 5


@pytest.mark.parametrize(
    ("run", "settings", "few", "many"),
    [(RUNNING_STEP, EVENTS, 15, 200), (WAITING_FOR_NODES, EVENTS, 60, 200),
     (WAITING_FOR_PODS, EVENTS, 5, 200), (RUNNING_STEP, TIMER, 5, 200)],
    ids=["running-step", "waiting-for-nodes", "polled", "timer"],
)  # fmt: skip
def test_many_runs_stretch_every_timed_wait_so_that_together_they_keep_to_the_budget(
    run: dict[str, Any], settings: OperatorSettings, few: float, many: float
) -> None:
    assert settings.max_passes_per_second == 5  # the default
    assert next_wait(run, settings, active_runs=3).seconds == few  # a small cluster: unchanged
    assert next_wait(run, settings, active_runs=1000).seconds == many  # 1,000 runs: 5 passes/s
    # Passes a second of 1,000 runs in a mix of waits: never over the budget.
    mix = [RUNNING_STEP, WAITING_FOR_NODES, WAITING_FOR_PODS, {}] * 250
    assert sum(1 / next_wait(r, settings, active_runs=1000).seconds for r in mix) <= 5


def test_the_budget_leaves_spec_timeout_and_back_off_alone_and_0_turns_it_off() -> None:
    assert next_wait(RUNNING_STEP, EVENTS, seconds_left=3, active_runs=1000).seconds == 4
    assert next_wait(RUNNING_STEP, EVENTS, busy_passes=1, active_runs=1000).seconds == 5
    unlimited = OperatorSettings(progress_interval=15, max_passes_per_second=0)
    assert next_wait(RUNNING_STEP, unlimited, active_runs=100_000).seconds == 15
    assert stretched(5, 0, EVENTS) == 5


def test_a_pass_that_changed_the_phase_is_followed_by_the_next_within_a_second() -> None:
    """Admitted (Pending to Provisioning), a run deploys its target at the next pass:
    not active runs / budget later (200 s with 1,000 runs)."""
    provisioning = status("Provisioning", "Provisioning", None)
    assert next_wait(provisioning, EVENTS, active_runs=1000).seconds == 200
    assert next_wait(provisioning, EVENTS, active_runs=1000, moved=True).seconds == MIN_GAP_S
    assert next_wait(provisioning, TIMER, active_runs=1000, moved=True).seconds == MIN_GAP_S
    # A busy API server still backs off.
    assert next_wait(provisioning, EVENTS, busy_passes=2, moved=True).seconds == 10


def test_a_stretched_wait_is_jittered_around_its_length_and_a_short_one_is_not() -> None:
    many = [next_wait(RUNNING_STEP, EVENTS, active_runs=1000, jitter=j).seconds
            for j in (0.75, 1.0, 1.25)]  # fmt: skip
    assert many == [150, 200, 250]  # the mean holds: the budget too
    assert next_wait(RUNNING_STEP, EVENTS, active_runs=3, jitter=1.25).seconds == 15
    assert stretched(15, 100, EVENTS, jitter=1.25) == 25  # 100 runs / 5 a second, jittered
    assert stretched(15, 100, EVENTS, jitter=0.5) == 15  # never below the interval


def test_the_budget_is_read_from_the_environment() -> None:
    assert OperatorSettings.from_env({}).max_passes_per_second == 5
    env = {"DBBENCH_MAX_PASSES_PER_SECOND": "2.5"}
    assert OperatorSettings.from_env(env).max_passes_per_second == 2.5


def test_only_a_pending_run_held_back_by_another_waits_for_nodes() -> None:
    assert waits_for_nodes(WAITING_FOR_NODES)
    assert not waits_for_nodes(RUNNING_STEP)
    assert not waits_for_nodes(status("Pending", "Accepted"))


class _AnswerError(Exception):
    def __init__(self, status: int, headers: dict[str, str]) -> None:
        self.status, self.headers, self.body, self.reason = status, headers, None, "x"


@pytest.mark.parametrize(
    ("status_code", "headers", "transient", "retry_after"),
    [(429, {"Retry-After": "7"}, True, 7.0), (503, {"retry-after": "2"}, True, 2.0),
     (500, {}, True, None), (429, {"Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"}, True, None),
     (422, {"Retry-After": "7"}, False, None), (403, {}, False, None)],
)  # fmt: skip
def test_throttling_and_server_errors_are_transient_and_carry_retry_after(
    status_code: int, headers: dict[str, str], transient: bool, retry_after: float | None
) -> None:
    error = KubeError("get", "Job", "team-a", "x", _AnswerError(status_code, headers))
    assert error.transient is transient
    assert error.retry_after == retry_after
