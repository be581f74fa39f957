"""spec.expectations admission (issue 31, item 4): what cannot be honoured is
refused naming the field and the fix, by the CRD's rules (in Python here, at the
real API server through tests/data/invalid) and by the operator's own checks
(tests/data/refused: the operation types a phase performs, the series label)."""

from __future__ import annotations

from typing import Any

import pytest

from dbbench_contract.api import SpecError, check, parse_spec
from dbbench_contract.api.admission import check_manifest
from dbbench_contract.api.expectation_checks import operations_of, series_problems
from dbbench_contract.api.expectations import latency_ms


def manifest(*expectations: dict[str, Any], labels: dict[str, str] | None = None) -> Any:
    return {
        "apiVersion": "dbbench.io/v1alpha1", "kind": "BenchmarkRun",
        "metadata": {"name": "r", "namespace": "ns", "labels": labels or {}},
        "spec": {
            "targets": [{"name": "db", "engine": "mariadb"}],
            "dataset": {"shape": "indexed4", "records": 1000},
            "phases": [
                {"name": "load", "type": "insert"},
                {"name": "mix", "type": "mix", "operations": 100,
                 "mix": {"read": 5, "readModifyWrite": 1}},
                {"name": "q", "type": "query", "operations": 100, "queries": ["sortSkip"]},
            ],
            "expectations": list(expectations),
        },
    }  # fmt: skip


def refusals(doc: Any) -> list[str]:
    return [str(p) for p in check_manifest(doc)]


def test_a_full_expectation_is_admitted_with_its_defaults() -> None:
    doc = manifest(
        {"phase": "mix", "target": "db", "operation": "readModifyWrite", "minOpsPerSecond": 50.5,
         "maxLatency": {"p50": "800us", "p99.9": "2s"}, "maxErrorRate": 0.001,
         "tolerance": {"withinPercentOfRecent": 10}},
        {"phase": "q", "operation": "sortSkip", "maxLatency": {"max": "1s"}, "onMiss": "Record"},
        labels={"dbbench.io/series": "nightly"},
    )  # fmt: skip
    assert refusals(doc) == []
    spec = parse_spec(doc["spec"])
    first, second = spec.expectations or []
    assert (first.on_miss, second.on_miss) == ("Fail", "Record")
    assert first.tolerance is not None
    assert (first.tolerance.recent_runs, first.tolerance.metrics) == (5, ["opsPerSecond", "p99"])
    assert check(spec) == []


@pytest.mark.parametrize(
    ("expectation", "field", "fix"),
    [
        ({"phase": "reads", "minOpsPerSecond": 1}, "spec.expectations", "use one of spec.phases"),
        ({"phase": "mix", "target": "pg", "minOpsPerSecond": 1}, "spec.expectations",
         "use one of spec.targets"),
        ({"phase": "mix"}, "spec.expectations[0]", "set minOpsPerSecond, maxLatency"),
        ({"phase": "mix", "maxLatency": {"p90": "1ms"}}, "spec.expectations[0].maxLatency",
         "key the bounds by those"),
        ({"phase": "mix", "maxLatency": {"p99": "1.5ms"}}, "spec.expectations[0].maxLatency.p99",
         "should match"),
        ({"phase": "mix", "operation": "update", "minOpsPerSecond": 1},
         "spec.expectations[0].operation", "use one of read, readModifyWrite"),
        ({"phase": "q", "operation": "scan100", "minOpsPerSecond": 1},
         "spec.expectations[0].operation", "use one of sortSkip"),
        ({"phase": "mix", "tolerance": {"withinPercentOfRecent": 5}},
         "spec.expectations[0].tolerance", "add metadata.labels[dbbench.io/series]"),
    ],
)  # fmt: skip
def test_what_cannot_be_honoured_is_refused_naming_the_field_and_the_fix(
    expectation: dict[str, Any], field: str, fix: str
) -> None:
    found = refusals(manifest(expectation))
    assert any(line.startswith(f"{field}: ") and fix in line for line in found), found


def test_the_operator_refuses_what_the_crd_refuses() -> None:
    with pytest.raises(SpecError) as caught:
        parse_spec(manifest({"phase": "nope", "minOpsPerSecond": 1})["spec"])
    assert [p.field for p in caught.value.problems] == ["spec.expectations"]


def test_a_tolerance_needs_the_series_label_only() -> None:
    spec = parse_spec(manifest({"phase": "mix", "tolerance": {"withinPercentOfRecent": 5}})["spec"])
    assert [p.field for p in series_problems(spec, {})] == ["spec.expectations[0].tolerance"]
    assert list(series_problems(spec, {"dbbench.io/series": "s"})) == []
    bounds = parse_spec(manifest({"phase": "mix", "minOpsPerSecond": 1})["spec"])
    assert list(series_problems(bounds, None)) == []


def test_operation_types_of_each_phase_type() -> None:
    spec = parse_spec(manifest()["spec"] | {"expectations": None})
    assert [operations_of(p) for p in spec.phases] == [
        ("insert",), ("read", "readModifyWrite"), ("sortSkip",),
    ]  # fmt: skip


@pytest.mark.parametrize(("text", "ms"), [("500us", 0.5), ("5ms", 5.0), ("2s", 2000.0)])
def test_latency_bounds_in_milliseconds(text: str, ms: float) -> None:
    assert latency_ms(text) == ms
