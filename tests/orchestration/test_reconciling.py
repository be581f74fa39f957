"""One reconcile pass, for the phases that need no cluster I/O (Pending, terminal)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from dbbench_operator.model.status import BenchmarkRunStatus
from dbbench_operator.naming import RunRef
from dbbench_operator.reconciling import reconcile

REPO = Path(__file__).resolve().parents[2]
RUN = RunRef(name="quick", namespace="team-a", uid="uid-1", generation=2)
NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def quickstart(**overrides: Any) -> dict[str, Any]:
    spec = dict(yaml.safe_load((REPO / "examples" / "quickstart.yaml").read_text())["spec"])
    spec.update(overrides)
    return spec


def test_pending_valid_run_is_accepted_and_its_status_fits_the_crd_schema() -> None:
    outcome = reconcile(RUN, quickstart(), {}, NOW)
    status = outcome.status
    assert status["phase"] == "Provisioning"
    assert status["observedGeneration"] == 2
    assert status["startedAt"] == "2026-11-22T12:00:00Z"
    assert status["progress"]["steps"] == 3
    BenchmarkRunStatus.model_validate(status)  # what the CRD's status schema accepts
    assert outcome.events == (("Normal", "Provisioning", "deploying the databases under test"),)


def test_semantic_problem_fails_with_a_warning_event_naming_the_field() -> None:
    outcome = reconcile(RUN, quickstart(timeout="1s"), {}, NOW)
    assert outcome.status["phase"] == "Failed"
    assert "spec.timeout" in outcome.status["message"]
    assert "completedAt" in outcome.status
    ((kind, reason, message),) = outcome.events
    assert (kind, reason) == ("Warning", "InvalidSpec")
    assert "spec.timeout" in message
    BenchmarkRunStatus.model_validate(outcome.status)


def test_unparseable_spec_fails_naming_the_field() -> None:
    # Bypasses admission (e.g. an old CRD): the operator applies the same rules.
    outcome = reconcile(RUN, quickstart(repeats=0), {}, NOW)
    assert outcome.status["phase"] == "Failed"
    assert "spec.repeats" in outcome.status["message"]


def test_terminal_run_is_not_touched() -> None:
    for phase in ("Succeeded", "Failed"):
        outcome = reconcile(RUN, quickstart(), {"phase": phase}, NOW)
        assert outcome.status == {}
        assert outcome.events == ()


def test_start_time_is_kept_across_passes() -> None:
    first = reconcile(RUN, quickstart(timeout="1s"), {"startedAt": "2026-11-22T11:00:00Z"}, NOW)
    assert "startedAt" not in first.status
