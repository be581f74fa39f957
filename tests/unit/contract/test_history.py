"""The series history's wire format (dbbench_contract.history)."""

from __future__ import annotations

import json

from dbbench_contract.history import (
    HIGHER_IS_BETTER,
    METRICS,
    ChangePoint,
    SeriesHistory,
    SeriesPoint,
    Verdict,
)


def _point(**changes: object) -> SeriesPoint:
    fields: dict[str, object] = {
        "namespace": "bench", "series": "nightly", "run": "nightly-1", "uid": "u1",
        "ended_at": "2026-11-28T10:00:00Z", "target": "pg", "phase": "run", "repeat": 1,
        "ops_per_second": 1000.0, "records_per_second": None,
        "p50_ms": 1.0, "p95_ms": 2.0, "p99_ms": 3.0, "p999_ms": 4.0, "errors": 5,
    }  # fmt: skip
    fields.update(changes)
    return SeriesPoint.model_validate(fields)


def test_a_point_names_each_metric_by_its_wire_name() -> None:
    point = _point()
    assert [point.value(m) for m in METRICS] == [1000.0, None, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert point.to_wire()["opsPerSecond"] == 1000.0
    assert point.to_wire()["operationType"] == "all"
    assert {"opsPerSecond", "recordsPerSecond"} == HIGHER_IS_BETTER


def test_the_answer_round_trips_and_a_newer_writers_keys_are_ignored() -> None:
    change = ChangePoint(
        run="nightly-3", uid="u3", ended_at="2026-11-28T12:00:00Z", target="pg", phase="run",
        operation_type="all", metric="p99Ms", direction="Regression", before=3.0, after=6.0,
        pvalue=1e-5,
    )  # fmt: skip
    answer = SeriesHistory(
        namespace="bench", series="nightly", significance=0.001, min_runs=5, runs=3,
        points=(_point(),), change_points=(change,),
        verdict=Verdict(run="nightly-3", uid="u3", reason="Regression",
                        message=change.describe(), change_points=(change,)),
    )  # fmt: skip
    wire = answer.to_wire()
    wire["addedLater"] = {"x": 1}
    assert SeriesHistory.from_json(json.dumps(wire)) == answer
    assert change.describe() == "p99Ms of pg/run/all: 3 -> 6 (p=1e-05)"
