"""``spec.expectations[]``: what a run must reach, and ``status.expectations[]``:
how each bound fared when the run ended.

An expectation names where it applies (a phase; one target or every target; one
operation type or the phase's figures over all its types) and bounds on what
the run's step summaries measure there: ops/s, latency percentiles, error rate,
and a tolerance against the series' recent runs. Every repeat of the phase must
hold a bound (the worst repeat is the one measured), so a bound is a floor or
ceiling of every measurement, not of an average that one bad repeat hides in.
The operator judges them when the run's last step is collected
(``dbbench_operator.status.expectations``); ``onMiss`` says whether a miss fails
the run.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal, get_args

from pydantic import Field

from .base import ApiModel, Rule, StatusModel

OnMiss = Literal["Fail", "Record"]
OperationType = Literal[
    "insert", "read", "update", "scan", "readModifyWrite",
    "indexedEquality", "twoFieldProjection", "sortSkip", "scan100",
]  # fmt: skip
OPERATION_TYPES: frozenset[str] = frozenset(get_args(OperationType))
# The percentiles a step summary computes (`api.status.Latency`), as written in
# maxLatency's keys, and the Latency attribute of each.
PERCENTILES = {"p50": "p50", "p95": "p95", "p99": "p99", "p99.9": "p999", "max": "max"}
TolerancedMetric = Literal["opsPerSecond", "p50", "p95", "p99", "p99.9"]
# A latency bound: one number and a unit; microseconds too, since point reads on
# a fast server take well under a millisecond (the run-wide durations start at ms).
DEFAULT_TOLERANCE_METRICS: tuple[TolerancedMetric, ...] = ("opsPerSecond", "p99")
LATENCY_PATTERN = r"^[0-9]{1,9}(us|ms|s)$"
_LATENCY_UNITS_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0}
LatencyBound = Annotated[str, Field(pattern=LATENCY_PATTERN, max_length=12)]
_PERCENTILE_LIST = "[" + ", ".join(f"'{k}'" for k in PERCENTILES) + "]"


def latency_ms(text: str) -> float:
    """Milliseconds in a latency bound such as ``500us``, ``5ms`` or ``1s``."""
    match = re.fullmatch(r"([0-9]+)(us|ms|s)", text)
    if match is None:
        raise ValueError(f"{text!r} is not a latency like 500us, 5ms or 1s")
    return int(match.group(1)) * _LATENCY_UNITS_MS[match.group(2)]


class Tolerance(ApiModel):
    """How far a run may fall behind the median of its series' recent runs."""

    within_percent_of_recent: float = Field(
        gt=0,
        le=1000,
        description=(
            "The run's figure may be at most this many percent worse than the median of "
            "the same figure (same target, phase and operation type) over the series' "
            "`recentRuns` latest finished runs: ops/s at least median x (1 - p/100), "
            "latencies at most median x (1 + p/100). E.g. 10."
        ),
    )
    recent_runs: int = Field(
        default=5,
        ge=1,
        le=50,
        description="How many of the series' latest finished runs the median is taken over "
        "(default 5); fewer when the series has fewer.",
    )
    metrics: list[TolerancedMetric] = Field(
        default_factory=lambda: list(DEFAULT_TOLERANCE_METRICS),
        min_length=1,
        max_length=5,
        description=(
            "The figures compared: opsPerSecond, p50, p95, p99, p99.9 (default opsPerSecond "
            "and p99)."
        ),
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )


class Expectation(ApiModel):
    """Bounds a phase's measurements must hold: on one target or each, on one
    operation type or the phase's figures over all of them; every repeat must hold."""

    phase: str = Field(
        min_length=1,
        max_length=30,
        pattern=r"^[a-z]([-a-z0-9]*[a-z0-9])?$",
        description="The phase (spec.phases[].name) whose steps are measured.",
    )
    target: str | None = Field(
        default=None,
        min_length=1,
        max_length=63,
        description="The target (spec.targets[].name); unset: each target, judged on its own.",
    )
    operation: OperationType | None = Field(
        default=None,
        description=(
            "One operation type of the phase: insert, read, update, scan, readModifyWrite, "
            "or a query (indexedEquality, twoFieldProjection, sortSkip, scan100); it must be "
            "one the phase performs. Unset: the phase's figures over all its operations."
        ),
    )
    min_ops_per_second: float | None = Field(
        default=None, gt=0, description="Operations per second every repeat must reach."
    )
    max_latency: dict[str, LatencyBound] | None = Field(
        default=None,
        max_length=5,
        description=(
            "Latency every repeat must stay within, per percentile: keys p50, p95, p99, "
            "p99.9, max; values like 500us, 5ms or 1s. E.g. {p99: 5ms}."
        ),
    )
    max_error_rate: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description=(
            "Errors / operations every repeat must stay within, a fraction (0.001 = 0.1%), "
            "as phases[].maxErrorRate."
        ),
    )
    tolerance: Tolerance | None = Field(
        default=None,
        description=(
            "Compare with the series' recent runs (the run's dbbench.io/series label is "
            "required). Not judged while the series has no earlier run."
        ),
    )
    on_miss: OnMiss = Field(
        default="Fail",
        description=(
            "Fail (default): a missed bound fails the run (phase Failed, reason "
            "ExpectationsMissed), what a pipeline gating on the run wants. Record: the run "
            "ends as it would have; the Expectations condition and status.expectations "
            "say what was missed."
        ),
    )

    RULES = (
        Rule(
            cel=(
                "has(self.minOpsPerSecond) || has(self.maxLatency) || has(self.maxErrorRate) "
                "|| has(self.tolerance)"
            ),
            message=(
                "an expectation needs a bound: set minOpsPerSecond, maxLatency, maxErrorRate "
                "or tolerance"
            ),
            reason="FieldValueRequired",
            holds=lambda e: (
                e.min_ops_per_second is not None
                or e.max_latency is not None
                or e.max_error_rate is not None
                or e.tolerance is not None
            ),
        ),
        Rule(
            cel=f"!has(self.maxLatency) || self.maxLatency.all(k, k in {_PERCENTILE_LIST})",
            message=(
                "maxLatency: a step summary computes p50, p95, p99, p99.9 and max; key the "
                "bounds by those (e.g. p99: 5ms)"
            ),
            field="maxLatency",
            reason="FieldValueInvalid",
            holds=lambda e: e.max_latency is None or all(k in PERCENTILES for k in e.max_latency),
        ),
    )


# The spec-level rules (BenchmarkRunSpec.RULES): what an expectation names exists.
SPEC_RULES = (
    Rule(
        cel=(
            "!has(self.expectations) || "
            "self.expectations.all(e, self.phases.exists(p, p.name == e.phase))"
        ),
        message=(
            "expectations[].phase names a phase this run does not have; use one of "
            "spec.phases[].name"
        ),
        field="expectations",
        holds=lambda s: all(any(p.name == e.phase for p in s.phases) for e in s.expectations or ()),
    ),
    Rule(
        cel=(
            "!has(self.expectations) || self.expectations.all(e, !has(e.target) || "
            "self.targets.exists(t, t.name == e.target))"
        ),
        message=(
            "expectations[].target names a target this run does not have; use one of "
            "spec.targets[].name, or leave target unset for every target"
        ),
        field="expectations",
        holds=lambda s: all(
            e.target is None or any(t.name == e.target for t in s.targets)
            for e in s.expectations or ()
        ),
    ),
)


Verdict = Literal["Held", "Missed", "NotJudged"]


class ExpectationOutcome(StatusModel):
    """One bound of one expectation on one target, as judged when the run ended."""

    expectation: int = Field(ge=0, description="Index in spec.expectations.")
    target: str = Field(description="Target name.")
    phase: str = Field(description="Phase name.")
    operation: str | None = Field(
        default=None, description="Operation type; unset: the phase's figures over all types."
    )
    bound: str = Field(
        max_length=64,
        description=(
            "The bound: minOpsPerSecond, maxLatency.<percentile>, maxErrorRate, or "
            "tolerance.<metric>."
        ),
    )
    verdict: Verdict = Field(description="Held, Missed, or NotJudged (message says why).")
    limit: float | None = Field(
        default=None,
        description=(
            "The bound in `unit` (tolerance: the median of the recent runs, worsened by the "
            "tolerance)."
        ),
    )
    measured: float | None = Field(
        default=None, description="The worst repeat's figure, in `unit`."
    )
    unit: Literal["ops/s", "ms", "fraction"] = Field(description="ops/s, ms or fraction.")
    repeat: int | None = Field(default=None, ge=1, description="The worst repeat, 1-based.")
    by_percent: float | None = Field(
        default=None,
        description=(
            "How far the worst repeat is past the bound, percent of the bound (positive: "
            "missed by that much; negative: the margin it held by). Unset when the bound is 0."
        ),
    )
    on_miss: OnMiss = Field(default="Fail", description="The expectation's onMiss.")
    message: str | None = Field(default=None, max_length=512, description="Why it was not judged.")


def _number(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "fraction":
        return f"{value:.4g}"
    return f"{value:.4g} {unit}"


def describe(o: ExpectationOutcome) -> str:
    """One outcome in words: where, the bound, the measured figure, by how much (the
    Expectations condition's message, and `dbbench wait`)."""
    where = f"expectations[{o.expectation}] {o.target}/{o.phase}"
    if o.operation:
        where += f"/{o.operation}"
    if o.verdict == "NotJudged":
        return f"{where} {o.bound}: not judged ({o.message})"
    sign = ">=" if o.bound in ("minOpsPerSecond", "tolerance.opsPerSecond") else "<="
    text = (f"{where} {o.bound} {sign} {_number(o.limit, o.unit)}: measured "
            f"{_number(o.measured, o.unit)} (repeat {o.repeat})")  # fmt: skip
    if o.by_percent is not None:
        word = "missed by" if o.verdict == "Missed" else "held by"
        text += f", {word} {abs(o.by_percent):g}%"
    return text
