"""Whose a child is (pure), and how a pass reacts to a name it does not own.

The real API server's side (a same-name run waiting for its predecessor's
Secret, a squatted ConfigMap) is in test_run_children.py.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from dbbench_contract.api import parse_spec
from dbbench_operator.k8s import ownership
from dbbench_operator.k8s.ownership import ForeignChildError, PreviousRunChildError
from dbbench_operator.naming import RunRef, owner_reference
from dbbench_operator.settings import OperatorSettings
from dbbench_operator.specs.plan import plan
from dbbench_operator.steps import advancing
from dbbench_operator.steps.advancing import Context, advance

REPO = Path(__file__).resolve().parents[4]
RUN = RunRef("quick", "team-a", "new-uid")
EARLIER = RunRef("quick", "team-a", "old-uid")
NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def child(*owners: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "Secret", "metadata": {"name": "quick-credentials", "namespace": "team-a",
                                           "ownerReferences": list(owners)}}  # fmt: skip


def test_a_child_is_the_runs_only_by_uid() -> None:
    assert ownership.check(child(owner_reference(RUN)), RUN)
    with pytest.raises(PreviousRunChildError) as earlier:
        ownership.check(child(owner_reference(EARLIER)), RUN)
    assert "old-uid" in str(earlier.value)
    assert earlier.value.reason == "WaitingForPreviousRun"
    with pytest.raises(ForeignChildError) as foreign:
        ownership.check(child(), RUN)
    assert type(foreign.value) is ForeignChildError
    assert "Secret team-a/quick-credentials exists and is not this run's (no owner)" in str(
        foreign.value)  # fmt: skip
    other_kind = {**owner_reference(EARLIER), "kind": "Deployment", "apiVersion": "apps/v1"}
    with pytest.raises(ForeignChildError) as not_a_run:
        ownership.check(child(other_kind), RUN)
    assert type(not_a_run.value) is ForeignChildError


def context(started_ago: timedelta) -> Context:
    spec = parse_spec(yaml.safe_load((REPO / "examples" / "quickstart.yaml").read_text())["spec"])
    return Context(RUN, spec, plan(spec), OperatorSettings(), deadline_seconds=600, now=NOW,
                   runner_image="runner:1", started=NOW - started_ago)  # fmt: skip


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> list[Exception]:
    raised: list[Exception] = []

    def refuse(*_: Any, **__: Any) -> None:
        raise raised[0]

    monkeypatch.setattr(advancing.teardown, "retire_targets", lambda *_a, **_k: 0)
    monkeypatch.setattr(advancing.provisioning, "ensure_run_objects", refuse)
    return raised


def test_an_earlier_runs_child_is_waited_for_up_to_the_startup_grace(
    taken: list[Exception],
) -> None:
    taken.append(PreviousRunChildError("Secret", "team-a", "quick-credentials", "uid old-uid"))
    waiting = advance(context(timedelta(minutes=1)), steps_done=0, cold_mark=None)
    assert waiting.failure is None
    assert waiting.reason == "WaitingForPreviousRun"
    assert "quick-credentials still belongs to an earlier BenchmarkRun" in waiting.message
    late = advance(context(timedelta(minutes=6)), steps_done=0, cold_mark=None)
    assert late.failure is not None
    assert late.failure[0] == "WaitingForPreviousRun"
    assert "still there after spec.startupGrace (5m)" in late.failure[1]


def test_a_name_that_is_no_runs_fails_the_run_at_once(taken: list[Exception]) -> None:
    taken.append(ForeignChildError("ConfigMap", "team-a", "quick-plan", "no owner"))
    moved = advance(context(timedelta(seconds=5)), steps_done=0, cold_mark=None)
    assert moved.failure is not None
    assert moved.failure[0] == "NameTaken"
    assert "ConfigMap team-a/quick-plan" in moved.failure[1]
