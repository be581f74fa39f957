"""Judging a run's expectations (``spec.expectations``) on its merged step
summaries: pure, so every bound kind, repeats and tolerances are unit-tested.

Each expectation applies to each target it names (all, when unset) and yields
one outcome per bound. Repeats: every repeat must hold a bound, so the worst
repeat is the one measured (lowest ops/s, highest latency or error rate) and
shown with its number. A tolerance compares the worst repeat with the median
of the series' recent runs' figures (one figure per run: the index's value for
that run), worsened by the tolerance: the median, not the mean, so that one
odd earlier run does not move the bar.

A bound is NotJudged, never Missed, when there is nothing to judge it on: no
operation of the type was measured (latency, error rate), or no recent runs
(the series is new, or its index is unavailable). NotJudged does not fail a run.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dbbench_contract.api.expectations import (
    OPERATION_TYPES,
    PERCENTILES,
    Expectation,
    ExpectationOutcome,
    describe,
    latency_ms,
)
from dbbench_contract.api.spec import BenchmarkRunSpec
from dbbench_contract.api.status import Latency
from dbbench_contract.history import ALL_OPERATIONS, Metric, SeriesHistory, SeriesPoint
from dbbench_contract.summary import StepSummary
from dbbench_operator.status.lifecycle import Condition

EXPECTATIONS = "Expectations"  # the condition type
MET, MISSED, NOT_STATED = "Met", "Missed", "NotStated"
EXPECTATIONS_MISSED = "ExpectationsMissed"  # the Failed reason when onMiss: Fail
# (target, phase, operation or "" for the phase's figures, metric) -> the series'
# figures of its recent finished runs, oldest first; metric is opsPerSecond or a
# percentile key (p99, p99.9...).
RecentKey = tuple[str, str, str, str]
Recent = Mapping[RecentKey, Sequence[float]]


@dataclass(frozen=True)
class Measured:
    """One collected step: where it ran and its merged summary."""

    target: str
    phase: str
    repeat: int
    summary: StepSummary


@dataclass(frozen=True)
class Figures:
    """One repeat's figures for one expectation (the phase's, or one operation type's)."""

    repeat: int
    operations: int
    errors: int
    ops_per_second: float
    latency: Latency

    def metric(self, name: str) -> float:
        if name == "opsPerSecond":
            return self.ops_per_second
        return float(getattr(self.latency, PERCENTILES[name]))


def figures(measured: Measured, operation: str | None) -> Figures:
    s = measured.summary
    if operation is None:
        return Figures(measured.repeat, s.operations, s.errors, s.throughput, s.latency_ms)
    kind = s.operations_by_type.get(operation)
    if kind is None:  # the phase drew none of this type
        return Figures(measured.repeat, 0, 0, 0.0, Latency())
    return Figures(measured.repeat, kind.operations, kind.errors, kind.throughput, kind.latency_ms)


def metric(name: str) -> Callable[[Figures], float]:
    """A figure by name: opsPerSecond or a percentile key (p99, p99.9...)."""
    return lambda f: f.metric(name)


def _error_rate(f: Figures) -> float:
    return f.errors / f.operations


def _by_percent(limit: float, measured: float, floor: bool) -> float | None:
    """How far past the bound, percent of it: positive when missed."""
    if limit == 0:
        return None
    past = (limit - measured) if floor else (measured - limit)
    return round(past / limit * 100, 1)


@dataclass(frozen=True)
class Where:
    """One expectation on one target: the fields every outcome of it repeats."""

    index: int
    target: str
    expectation: Expectation

    def outcome(self, bound: str, unit: str, **rest: object) -> ExpectationOutcome:
        e = self.expectation
        return ExpectationOutcome.model_validate({
            "expectation": self.index, "target": self.target, "phase": e.phase,
            "operation": e.operation, "bound": bound, "unit": unit, "onMiss": e.on_miss,
            **rest,
        })  # fmt: skip


def judged(
    where: Where, bound: str, unit: str, *, limit: float, repeats: Sequence[Figures],
    value: Callable[[Figures], float], floor: bool,
) -> ExpectationOutcome:  # fmt: skip
    """A floor (floor=True: measured >= limit) or a ceiling on every repeat."""
    worst = (min if floor else max)(repeats, key=value)
    measured = round(value(worst), 6)
    held = measured >= limit if floor else measured <= limit
    return where.outcome(
        bound, unit, verdict="Held" if held else "Missed", limit=round(limit, 6),
        measured=measured, repeat=worst.repeat, by_percent=_by_percent(limit, measured, floor),
    )  # fmt: skip


def not_judged(where: Where, bound: str, unit: str, why: str) -> ExpectationOutcome:
    return where.outcome(bound, unit, verdict="NotJudged", message=why)


def tolerance_limit(metric: str, recent: Sequence[float], percent: float) -> float:
    """The bar a tolerance sets: the recent runs' median, worse by `percent`
    (ops/s lower, latencies higher). `recent` must not be empty."""
    median = statistics.median(recent)
    factor = 1 - percent / 100 if metric == "opsPerSecond" else 1 + percent / 100
    return max(median * factor, 0.0)


def _unit(metric: str) -> str:
    return "ops/s" if metric == "opsPerSecond" else "ms"


def _bounds(where: Where, repeats: Sequence[Figures], recent: Recent | None) -> Iterator[
    ExpectationOutcome
]:  # fmt: skip
    e = where.expectation
    measured = [r for r in repeats if r.operations > 0]
    if e.min_ops_per_second is not None:
        yield judged(where, "minOpsPerSecond", "ops/s", limit=e.min_ops_per_second,
                     repeats=repeats, value=metric("opsPerSecond"), floor=True)  # fmt: skip
    what = f"no {e.operation or ''} operations were measured".replace("  ", " ")
    for key, text in (e.max_latency or {}).items():
        bound = f"maxLatency.{key}"
        if not measured:
            yield not_judged(where, bound, "ms", what)
            continue
        yield judged(where, bound, "ms", limit=latency_ms(text), repeats=measured,
                     value=metric(key), floor=False)  # fmt: skip
    if e.max_error_rate is not None:
        if not measured:
            yield not_judged(where, "maxErrorRate", "fraction", what)
        else:
            yield judged(where, "maxErrorRate", "fraction", limit=e.max_error_rate,
                         repeats=measured, value=_error_rate, floor=False)  # fmt: skip
    if e.tolerance is not None:
        yield from _tolerances(where, repeats, recent)


def _tolerances(
    where: Where, repeats: Sequence[Figures], recent: Recent | None
) -> Iterator[ExpectationOutcome]:
    e = where.expectation
    assert e.tolerance is not None
    for name in e.tolerance.metrics:
        bound, unit = f"tolerance.{name}", _unit(name)
        if recent is None:
            yield not_judged(where, bound, unit, "the series' index is not available")
            continue
        key = (where.target, e.phase, e.operation or "", name)
        earlier = list(recent.get(key, ()))[-e.tolerance.recent_runs :]
        if not earlier:
            yield not_judged(where, bound, unit, "the series has no earlier run with this figure")
            continue
        limit = tolerance_limit(name, earlier, e.tolerance.within_percent_of_recent)
        floor = name == "opsPerSecond"
        usable = repeats if floor else [r for r in repeats if r.operations > 0]
        if not usable:
            yield not_judged(where, bound, unit, "no operations were measured")
            continue
        yield judged(where, bound, unit, limit=limit, repeats=usable, value=metric(name),
                     floor=floor)  # fmt: skip


# The index's names of the figures a tolerance compares (dbbench_contract.history).
_INDEXED: dict[str, Metric] = {
    "opsPerSecond": "opsPerSecond", "p50": "p50Ms", "p95": "p95Ms", "p99": "p99Ms",
    "p99.9": "p999Ms",
}  # fmt: skip


def recent_of(history: SeriesHistory, uid: str) -> Recent:
    """The series' figures per (target, phase, operation, metric), one per earlier
    run in run order: a run's repeats averaged (as the change points take them).
    The judged run (`uid`) is left out. An operation type a run has no point of
    is its step's own (`all`) figure when the step ran that type alone (the index
    keeps per-type points only for steps of several types)."""
    by_run: dict[str, dict[tuple[str, str, str], list[SeriesPoint]]] = {}
    for point in history.points:
        if point.uid != uid:
            key = (point.target, point.phase, point.operation_type)
            by_run.setdefault(point.uid, {}).setdefault(key, []).append(point)
    recent: dict[RecentKey, list[float]] = {}
    for steps in by_run.values():  # dicts keep the points' run order
        for (target, phase, kind), points in steps.items():
            operations = [kind] if kind != ALL_OPERATIONS else [""]
            if kind == ALL_OPERATIONS and not any(
                k[:2] == (target, phase) and k[2] != ALL_OPERATIONS for k in steps
            ):
                operations += sorted(OPERATION_TYPES)  # a one-type step: its own figures
            for name, metric in _INDEXED.items():
                values = [v for p in points if (v := p.value(metric)) is not None]
                if values:
                    for operation in operations:
                        key4 = (target, phase, operation, name)
                        recent.setdefault(key4, []).append(statistics.fmean(values))
    return recent


def judge(
    spec: BenchmarkRunSpec, steps: Sequence[Measured], recent: Recent | None = None
) -> list[ExpectationOutcome]:
    """Every bound of every expectation on every target it applies to, in spec
    order. `recent`: the series' recent figures (None: no index to ask)."""
    outcomes: list[ExpectationOutcome] = []
    for index, expectation in enumerate(spec.expectations or ()):
        targets = [expectation.target] if expectation.target else [t.name for t in spec.targets]
        for target in targets:
            ran = [s for s in steps if s.target == target and s.phase == expectation.phase]
            where = Where(index, target, expectation)
            repeats = [figures(s, expectation.operation) for s in sorted(ran, key=_repeat)]
            if not repeats:
                outcomes.append(not_judged(where, "steps", "ops/s", "no step of it was collected"))
                continue
            outcomes.extend(_bounds(where, repeats, recent))
    return outcomes


def _repeat(step: Measured) -> int:
    return step.repeat


def missed(outcomes: Sequence[ExpectationOutcome]) -> list[ExpectationOutcome]:
    return [o for o in outcomes if o.verdict == "Missed"]


def fails_run(outcomes: Sequence[ExpectationOutcome]) -> bool:
    """A missed bound of an expectation whose onMiss is Fail."""
    return any(o.on_miss == "Fail" for o in missed(outcomes))


def condition(stated: bool, outcomes: Sequence[ExpectationOutcome]) -> Condition:
    """The Expectations condition."""
    if not stated:
        return Condition(EXPECTATIONS, "True", NOT_STATED, "the run states no expectations")
    lost = missed(outcomes)
    unjudged = [o for o in outcomes if o.verdict == "NotJudged"]
    tail = "" if not unjudged else "; not judged: " + "; ".join(describe(o) for o in unjudged)
    if lost:
        text = f"{len(lost)} of {len(outcomes)} bounds missed: " + "; ".join(map(describe, lost))
        return Condition(EXPECTATIONS, "False", MISSED, (text + tail)[:4000])
    held = len(outcomes) - len(unjudged)
    return Condition(EXPECTATIONS, "True", MET, (f"all {held} judged bounds held" + tail)[:4000])


def newly_missed(before: Mapping[str, Any], after: Mapping[str, Any]) -> bool:
    """A status patch that turned the Expectations condition to Missed: the run is
    counted once, when the status saying so is first written."""
    return _reason(after) == MISSED and _reason(before) != MISSED


def _reason(status: Mapping[str, Any]) -> str | None:
    for condition in status.get("conditions") or ():
        if condition.get("type") == EXPECTATIONS:
            return str(condition.get("reason"))
    return None
