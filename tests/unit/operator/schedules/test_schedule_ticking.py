"""What a tick refuses and how the Accepted condition reads (the pure parts of
`schedules/ticking`; the tick itself runs against the real API server in
tests/integration/operator/test_schedules_operator.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from dbbench_contract.api.schedule import BenchmarkScheduleStatus
from dbbench_operator.schedules.ticking import _accepted, _reason, admit

TEMPLATE: dict[str, Any] = {
    "spec": {
        "targets": [{"name": "db", "engine": "mariadb"}],
        "phases": [
            {"name": "load", "type": "insert"},
            {"name": "r", "type": "pointReads", "duration": "1m"},
        ],
    }
}
CLAIM = "dbbench-results"
NOW = datetime(2026, 11, 28, 2, 0, tzinfo=UTC)


def test_a_valid_schedule_is_admitted() -> None:
    spec, problems = admit({"schedule": "*/5 * * * *", "timeZone": "Europe/Berlin",
                            "template": TEMPLATE}, CLAIM)  # fmt: skip
    assert problems == []
    assert spec is not None
    assert spec.template.spec.targets[0].name == "db"


@pytest.mark.parametrize(
    ("fields", "field", "reason"),
    [
        ({"schedule": "61 * * * *"}, "spec.schedule", "ScheduleInvalid"),
        ({"schedule": "every day"}, "spec.schedule", "ScheduleInvalid"),  # an old CRD let it in
        ({"timeZone": "Mars/Olympus"}, "spec.timeZone", "TimeZoneInvalid"),
        ({"template": {"spec": {**TEMPLATE["spec"], "timeout": "10s"}}},
         "spec.template.spec.timeout", "TemplateInvalid"),
        ({"template": {"spec": {**TEMPLATE["spec"], "results": {"claimName": "x"}}}},
         "spec.template.spec.results.claimName", "TemplateInvalid"),
        ({"template": {"spec": {**TEMPLATE["spec"], "cleanup": "Keep"}}},
         "spec.template.spec.cleanup", "TemplateInvalid"),
    ],
)  # fmt: skip
def test_what_cannot_be_honoured_is_refused_naming_the_field(
    fields: dict[str, Any], field: str, reason: str
) -> None:
    spec, problems = admit({"schedule": "@daily", "template": TEMPLATE, **fields}, CLAIM)
    assert spec is None
    assert field in {p.field for p in problems}, problems
    assert _reason(problems) == reason
    condition = _accepted(BenchmarkScheduleStatus(), problems, NOW, 2)
    assert (condition.status, condition.reason, condition.observed_generation) == (
        "False", reason, 2)  # fmt: skip
    assert field in (condition.message or "")


def test_the_condition_keeps_its_transition_time_while_its_status_holds() -> None:
    first = _accepted(BenchmarkScheduleStatus(), [], NOW, 1)
    assert (first.status, first.reason, first.last_transition_time) == ("True", "Valid", NOW)
    later = datetime(2026, 11, 28, 3, 0, tzinfo=UTC)
    held = _accepted(BenchmarkScheduleStatus(conditions=[first]), [], later, 1)
    assert held.last_transition_time == NOW
    _, problems = admit({"schedule": "61 * * * *", "template": TEMPLATE}, CLAIM)
    flipped = _accepted(BenchmarkScheduleStatus(conditions=[held]), problems, later, 2)
    assert (flipped.status, flipped.last_transition_time) == ("False", later)
