"""Judging spec.expectations on merged step summaries (issue 31, item 4): each
bound kind held and missed by how much, repeats (the worst one is measured),
operation types, tolerances against the series' recent runs, the condition."""

from __future__ import annotations

from typing import Any

import pytest

from dbbench_contract.api import parse_spec
from dbbench_contract.api.expectations import ExpectationOutcome, describe
from dbbench_contract.api.status import Latency
from dbbench_contract.history import SeriesHistory, SeriesPoint
from dbbench_contract.summary import OperationSummary, StepSummary
from dbbench_operator.status.expectations import (
    Measured,
    condition,
    fails_run,
    judge,
    newly_missed,
    recent_of,
    tolerance_limit,
)


def spec(*expectations: dict[str, Any], targets: tuple[str, ...] = ("a",)) -> Any:
    return parse_spec({
        "targets": [{"name": t, "engine": "mariadb"} for t in targets],
        "phases": [{"name": "load", "type": "insert"},
                   {"name": "mix", "type": "mix", "operations": 1000,
                    "mix": {"read": 90, "update": 10}}],
        "repeats": 3,
        "expectations": list(expectations),
    })  # fmt: skip


def step(
    target: str, repeat: int, ops: float, p99: float, *, errors: int = 0, operations: int = 1000,
    by_type: dict[str, OperationSummary] | None = None, phase: str = "mix",
) -> Measured:  # fmt: skip
    summary = StepSummary(
        target=target, engine="mariadb", phase=phase, type="mix", operations=operations,
        errors=errors, throughput=ops, latency_ms=Latency(p50=p99 / 4, p95=p99 / 2, p99=p99,
        p999=p99 * 2, max=p99 * 3), operations_by_type=by_type or {},
    )  # fmt: skip
    return Measured(target, phase, repeat, summary)


def only(outcomes: list[ExpectationOutcome]) -> ExpectationOutcome:
    assert len(outcomes) == 1, outcomes
    return outcomes[0]


def test_min_ops_per_second_is_held_by_every_repeat_or_missed_by_the_worst() -> None:
    run = spec({"phase": "mix", "minOpsPerSecond": 1000})
    held = only(judge(run, [step("a", 1, 1200, 2), step("a", 2, 1100, 2), step("a", 3, 1300, 2)]))
    assert (held.verdict, held.measured, held.repeat, held.by_percent) == ("Held", 1100, 2, -10.0)
    # One bad repeat among good ones: every repeat must hold (a mean of 1033 would pass).
    missed = only(judge(run, [step("a", 1, 1200, 2), step("a", 2, 900, 2), step("a", 3, 1000, 2)]))
    assert (missed.verdict, missed.limit, missed.measured) == ("Missed", 1000, 900)
    assert missed.repeat == 2
    assert missed.by_percent == 10.0
    assert missed.unit == "ops/s"
    assert describe(missed) == (
        "expectations[0] a/mix minOpsPerSecond >= 1000 ops/s: measured 900 ops/s (repeat 2), "
        "missed by 10%"
    )


def test_latency_bounds_per_percentile_in_their_units() -> None:
    run = spec({"phase": "mix", "maxLatency": {"p99": "4ms", "p99.9": "6000us", "max": "1s"}})
    outcomes = judge(run, [step("a", 1, 500, 3.0), step("a", 2, 500, 5.0)])
    by_bound = {o.bound: o for o in outcomes}
    assert set(by_bound) == {"maxLatency.p99", "maxLatency.p99.9", "maxLatency.max"}
    p99 = by_bound["maxLatency.p99"]
    assert (p99.verdict, p99.limit, p99.measured, p99.repeat, p99.by_percent) == (
        "Missed", 4.0, 5.0, 2, 25.0)  # fmt: skip
    p999 = by_bound["maxLatency.p99.9"]  # 2 x p99 = 10 ms against 6000us = 6 ms
    assert (p999.verdict, p999.limit, p999.measured) == ("Missed", 6.0, 10.0)
    assert by_bound["maxLatency.max"].verdict == "Held"  # 15 ms < 1 s
    assert {o.unit for o in outcomes} == {"ms"}


def test_error_rate_is_a_fraction_of_the_operations() -> None:
    run = spec({"phase": "mix", "maxErrorRate": 0.01})
    held = only(judge(run, [step("a", 1, 500, 1, errors=10, operations=1000)]))
    assert (held.verdict, held.measured, held.unit) == ("Held", 0.01, "fraction")
    missed = only(judge(run, [step("a", 1, 500, 1, errors=25, operations=1000)]))
    assert (missed.verdict, missed.measured, missed.by_percent) == ("Missed", 0.025, 150.0)
    zero = only(judge(spec({"phase": "mix", "maxErrorRate": 0}), [step("a", 1, 5, 1, errors=1)]))
    assert (zero.verdict, zero.by_percent) == ("Missed", None)  # no percent of a 0 bound


def test_an_operation_type_is_judged_on_its_own_figures() -> None:
    by_type = {
        "read": OperationSummary(operations=900, throughput=900, latency_ms=Latency(p99=1.0)),
        "update": OperationSummary(operations=100, errors=3, throughput=100,
                                   latency_ms=Latency(p99=9.0)),
    }  # fmt: skip
    run = spec(
        {"phase": "mix", "operation": "update", "maxLatency": {"p99": "5ms"}, "maxErrorRate": 0.01},
        {"phase": "mix", "operation": "read", "minOpsPerSecond": 800},
    )
    outcomes = judge(run, [step("a", 1, 1000, 2.0, by_type=by_type)])
    assert [(o.operation, o.bound, o.verdict, o.measured) for o in outcomes] == [
        ("update", "maxLatency.p99", "Missed", 9.0),
        ("update", "maxErrorRate", "Missed", 0.03),
        ("read", "minOpsPerSecond", "Held", 900),
    ]


def test_an_operation_never_drawn_is_zero_ops_and_its_latency_is_not_judged() -> None:
    run = spec({"phase": "mix", "operation": "update", "minOpsPerSecond": 1,
                "maxLatency": {"p99": "5ms"}})  # fmt: skip
    ops, latency = judge(run, [step("a", 1, 1000, 2.0, by_type={})])
    assert (ops.verdict, ops.measured) == ("Missed", 0)
    assert (latency.verdict, latency.message) == ("NotJudged", "no update operations were measured")
    assert not any(o.verdict == "Missed" for o in [latency])


def test_unset_target_judges_each_target_on_its_own() -> None:
    run = spec({"phase": "mix", "minOpsPerSecond": 100}, targets=("a", "b"))
    outcomes = judge(run, [step("a", 1, 150, 1), step("b", 1, 50, 1)])
    assert [(o.target, o.verdict) for o in outcomes] == [("a", "Held"), ("b", "Missed")]
    named = spec({"phase": "mix", "target": "a", "minOpsPerSecond": 100}, targets=("a", "b"))
    assert [o.target for o in judge(named, [step("a", 1, 150, 1), step("b", 1, 50, 1)])] == ["a"]


def test_a_phase_without_collected_steps_is_not_judged() -> None:
    outcome = only(judge(spec({"phase": "mix", "minOpsPerSecond": 1}), []))
    assert (outcome.verdict, outcome.message) == ("NotJudged", "no step of it was collected")


@pytest.mark.parametrize(
    ("metric", "recent", "percent", "limit"),
    [
        ("opsPerSecond", [1000, 1100, 900], 10, 900.0),  # median 1000, 10% lower
        ("opsPerSecond", [1000, 5000, 900, 950], 10, 877.5),  # median 975: one odd run
        ("p99", [2.0, 2.0, 4.0], 50, 3.0),  # median 2 ms, 50% higher
        ("opsPerSecond", [100], 200, 0.0),  # never below 0
    ],
)
def test_tolerance_limit_is_the_median_worsened(
    metric: str, recent: list[float], percent: float, limit: float
) -> None:
    assert tolerance_limit(metric, recent, percent) == pytest.approx(limit)


def test_tolerance_against_the_series_recent_runs() -> None:
    run = spec({"phase": "mix", "tolerance": {"withinPercentOfRecent": 10, "recentRuns": 3}})
    recent = {
        # the oldest (10000 ops/s) is past recentRuns: it does not count
        ("a", "mix", "", "opsPerSecond"): [10000, 1000, 1000, 1000],
        ("a", "mix", "", "p99"): [2.0, 2.0, 2.0],
    }
    ops, p99 = judge(run, [step("a", 1, 850, 2.1), step("a", 2, 950, 2.0)], recent)
    assert (ops.bound, ops.verdict, ops.limit, ops.measured, ops.repeat) == (
        "tolerance.opsPerSecond", "Missed", 900, 850, 1)  # fmt: skip
    assert ops.by_percent == pytest.approx(5.6)
    assert (p99.bound, p99.verdict, p99.limit, p99.measured) == ("tolerance.p99", "Held", 2.2, 2.1)


def test_tolerance_without_history_is_not_judged_and_fails_nothing() -> None:
    run = spec({"phase": "mix", "tolerance": {"withinPercentOfRecent": 10, "metrics": ["p99"]}})
    (no_index,) = judge(run, [step("a", 1, 1, 99)], None)
    (new_series,) = judge(run, [step("a", 1, 1, 99)], {})
    assert no_index.message == "the series' index is not available"
    assert new_series.message == "the series has no earlier run with this figure"
    assert not fails_run([no_index, new_series])
    assert condition(True, [no_index]).status == "True"


def test_condition_and_policy() -> None:
    run = spec(
        {"phase": "mix", "minOpsPerSecond": 1000},
        {"phase": "mix", "maxLatency": {"p99": "1ms"}, "onMiss": "Record"},
    )
    outcomes = judge(run, [step("a", 1, 1200, 3.0)])
    assert [o.verdict for o in outcomes] == ["Held", "Missed"]
    assert not fails_run(outcomes)  # the miss is Record's
    cond = condition(True, outcomes)
    assert (cond.type, cond.status, cond.reason) == ("Expectations", "False", "Missed")
    assert cond.message.startswith("1 of 2 bounds missed: expectations[1] a/mix maxLatency.p99")
    assert "measured 3 ms (repeat 1), missed by 200%" in cond.message
    failing = judge(run, [step("a", 1, 500, 0.5)])
    assert fails_run(failing)
    assert condition(True, failing).reason == "Missed"
    met = condition(True, judge(run, [step("a", 1, 1500, 0.5)]))
    assert (met.status, met.reason, met.message) == ("True", "Met", "all 2 judged bounds held")
    assert condition(False, []).reason == "NotStated"


def point(uid: str, repeat: int, ops: float, p99: float, kind: str = "all") -> SeriesPoint:
    return SeriesPoint(
        namespace="ns", series="s", run=f"run-{uid}", uid=uid, ended_at=f"2026-01-0{uid}",
        target="a", phase="mix", repeat=repeat, operation_type=kind, ops_per_second=ops,
        p50_ms=p99 / 4, p95_ms=p99 / 2, p99_ms=p99, p999_ms=p99 * 2,
    )  # fmt: skip


def test_recent_figures_from_the_series_index() -> None:
    history = SeriesHistory(namespace="ns", series="s", significance=0.001, min_runs=4, runs=3,
                            points=(
        point("1", 1, 1000, 2.0), point("1", 2, 1200, 4.0),  # repeats averaged: 1100, 3.0
        point("1", 1, 900, 2.5, "read"), point("1", 1, 100, 9.0, "update"),
        point("2", 1, 1300, 1.0), point("2", 1, 1200, 0.9, "read"),
        point("3", 1, 5, 99.0),  # the judged run itself: left out
    ))  # fmt: skip
    recent = recent_of(history, "3")
    assert recent[("a", "mix", "", "opsPerSecond")] == [1100, 1300]
    assert recent[("a", "mix", "", "p99")] == [3.0, 1.0]
    assert recent[("a", "mix", "", "p99.9")] == [6.0, 2.0]
    assert recent[("a", "mix", "read", "opsPerSecond")] == [900, 1200]
    assert recent[("a", "mix", "update", "p99")] == [9.0]  # run 2 drew no update
    # A step of one operation type has no per-type points: its own figures stand for it.
    single = SeriesHistory(namespace="ns", series="s", significance=0.001, min_runs=4, runs=1,
                           points=(point("1", 1, 700, 3.0),))  # fmt: skip
    assert recent_of(single, "9")[("a", "mix", "read", "opsPerSecond")] == [700]
    tolerance = {"withinPercentOfRecent": 10, "metrics": ["opsPerSecond"]}
    run = spec({"phase": "mix", "operation": "read", "tolerance": tolerance})
    (judged,) = judge(run, [step("a", 1, 0, 1.0, by_type={
        "read": OperationSummary(operations=10, throughput=1000, latency_ms=Latency(p99=1.0))})],
        recent)  # fmt: skip
    assert (judged.limit, judged.measured, judged.verdict) == (945, 1000, "Held")  # 1050 x 0.9


def _status(reason: str | None) -> dict[str, object]:
    conditions = [{"type": "Succeeded", "reason": "Missed"}]  # another type's reason: ignored
    if reason is not None:
        conditions.append({"type": "Expectations", "reason": reason})
    return {"conditions": conditions}


def test_a_run_is_counted_missed_once_when_its_status_first_says_so() -> None:
    assert newly_missed(_status(None), _status("Missed"))
    assert newly_missed(_status("Met"), _status("Missed"))
    assert not newly_missed(_status("Missed"), _status("Missed"))  # later passes
    assert not newly_missed(_status(None), _status("Met"))
    assert not newly_missed(_status(None), _status(None))
