"""The BenchmarkSchedule model offline: it refuses what the API server refuses (the
same invalid manifests, the same fields), its template carries the run's schema and
CEL rules, and the operator's checks of the template name the template's fields."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dbbench_contract.api.base import SpecError
from dbbench_contract.api.crd import build_crd
from dbbench_contract.api.schedule import (
    SCHEDULE_LABEL,
    SERIES_LABEL,
    parse_schedule_spec,
    template_problems,
    zone_problem,
)
from dbbench_contract.api.schedule_crd import build_schedule_crd
from tests.support.manifests import INVALID_SCHEDULES, SCHEDULE_EXAMPLES, expected_message, load

# Refused by a CEL rule on the object's metadata, which the spec model does not see.
CRD_ONLY = {"name-too-long.yaml"}
TEMPLATE = {
    "spec": {
        "targets": [{"name": "db", "engine": "mariadb"}],
        "phases": [
            {"name": "load", "type": "insert"},
            {"name": "r", "type": "pointReads", "duration": "1m"},
        ],
    }
}


@pytest.mark.parametrize(
    "path", [p for p in INVALID_SCHEDULES if p.name not in CRD_ONLY], ids=lambda p: p.name
)
def test_the_model_refuses_what_the_api_server_refuses_at_the_same_field(path: Path) -> None:
    expected = expected_message(path)
    with pytest.raises(SpecError) as refused:
        parse_schedule_spec(load(path)["spec"])
    shown = [str(p) for p in refused.value.problems]
    if expected.startswith("spec."):
        field = expected.split(":")[0]
        assert any(p.field == field for p in refused.value.problems), shown
    else:
        assert any(expected in text for text in shown), shown


@pytest.mark.parametrize("path", SCHEDULE_EXAMPLES, ids=lambda p: p.name)
def test_examples_are_admitted_by_the_operator_too(path: Path) -> None:
    spec = parse_schedule_spec(load(path)["spec"])
    assert template_problems(spec, "dbbench-results") == []
    assert zone_problem(spec) is None


def test_the_template_is_checked_as_a_run_at_the_templates_paths() -> None:
    spec = parse_schedule_spec({
        "schedule": "0 2 * * *",
        "template": {"spec": {**TEMPLATE["spec"], "timeout": "30s",
                              "results": {"claimName": "elsewhere"}}},
    })  # fmt: skip
    fields = {p.field for p in template_problems(spec, "dbbench-results")}
    assert fields == {"spec.template.spec.timeout", "spec.template.spec.results.claimName"}


def test_an_unknown_time_zone_is_refused_naming_the_field() -> None:
    spec = parse_schedule_spec({"schedule": "@daily", "timeZone": "Mars/Olympus",
                                "template": TEMPLATE})  # fmt: skip
    problem = zone_problem(spec)
    assert problem is not None
    assert problem.field == "spec.timeZone"
    assert "Mars/Olympus" in problem.message
    berlin = parse_schedule_spec({"schedule": "@daily", "timeZone": "Europe/Berlin",
                                  "template": TEMPLATE})  # fmt: skip
    assert zone_problem(berlin) is None


def test_defaults_are_cronjobs() -> None:
    spec = parse_schedule_spec({"schedule": "@daily", "template": TEMPLATE})
    assert spec.concurrency_policy == "Forbid"
    assert (spec.successful_runs_history_limit, spec.failed_runs_history_limit) == (3, 1)
    assert (spec.suspend, spec.starting_deadline_seconds, spec.time_zone) == (False, None, None)
    assert spec.template.labels == {}
    assert (SERIES_LABEL, SCHEDULE_LABEL) == ("dbbench.io/series", "dbbench.io/schedule")


def _without_descriptions(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _without_descriptions(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [_without_descriptions(v) for v in node]
    return node


def test_the_templates_schema_is_the_runs_spec_with_its_cel_rules() -> None:
    run_spec = build_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    crd = build_schedule_crd()
    version = crd["spec"]["versions"][0]
    template = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["template"]
    assert _without_descriptions(template["properties"]["spec"]) == _without_descriptions(run_spec)
    assert run_spec["x-kubernetes-validations"]  # the cross-field rules travel with it
    assert crd["spec"]["names"]["shortNames"] == ["bs"]
    assert [c["name"] for c in version["additionalPrinterColumns"]] == [
        "Schedule", "Suspend", "Active", "Last Run", "Next Run", "Verdict", "Age"]  # fmt: skip
