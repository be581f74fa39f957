"""The run's ChangePoint verdict when it cannot be asked for (steps/collecting.judge_run):
no series label, or a results service that does not answer. Neither fails the run."""

from __future__ import annotations

import socket
from datetime import UTC, datetime

from dbbench_operator.naming import RunRef
from dbbench_operator.settings import OperatorSettings
from dbbench_operator.status.lifecycle import (
    CHANGE_POINT,
    Condition,
    Observation,
    RunPhase,
    next_state,
)
from dbbench_operator.steps.collecting import Judged, judge_run


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_run_without_a_series_is_not_judged() -> None:
    judged = judge_run(OperatorSettings(), RunRef("r1", "bench", "uid-1"))
    assert judged.condition == Condition(
        CHANGE_POINT, "Unknown", "NotJudged",
        "the run has no dbbench.io/series label: it belongs to no series",
    )  # fmt: skip
    assert judged.event[0] == "Normal"
    assert judged.change is None


def test_an_unreachable_service_leaves_the_run_not_judged_saying_why() -> None:
    settings = OperatorSettings(results_url=f"http://127.0.0.1:{_closed_port()}",
                                results_key=b"k" * 32)  # fmt: skip
    judged = judge_run(settings, RunRef("r1", "bench", "uid-1", series="nightly"))
    assert (judged.reason, judged.series) == ("NotJudged", "nightly")
    assert judged.message.startswith("the results service did not judge the run: GET series")
    assert "unreachable" in judged.message
    assert "k" * 32 not in judged.message


def test_a_regression_is_a_true_condition_and_a_warning() -> None:
    judged = Judged("Regression", "opsPerSecond of db/load/all: 1000 -> 500 (p=1e-05)", "s")
    assert judged.condition.status == "True"
    assert judged.event == ("Warning", "Regression", judged.message)
    assert judged.change == "Regression"
    assert Judged("NoChange", "none").condition.status == "False"
    assert Judged("Improvement", "x").event[0] == "Normal"


def test_the_succeeded_decision_carries_the_verdict() -> None:
    verdict = Judged("NoChange", "no change point").condition
    now = datetime(2026, 11, 28, tzinfo=UTC)
    decision = next_state(RunPhase.COLLECTING, Observation(
        now=now, steps_total=1, steps_done=1, collected=True, change_point=verdict,
    ))  # fmt: skip
    assert decision is not None
    assert decision.phase is RunPhase.SUCCEEDED
    assert verdict in decision.conditions
