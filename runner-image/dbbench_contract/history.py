"""A series' history: the figures the results service indexes per run, and its
answer to ``GET /v1/series/<namespace>/<series>`` (and the browser's
``/api/series/<namespace>/<series>``, which `dbbench history` reads).

A series is every run of a namespace carrying the label ``dbbench.io/series=<name>``
(a schedule's runs carry their schedule's name). Each run adds one point per
measured step (target, phase, repeat) and operation type: ``all`` for the
step's own figures, then each operation type the step's summary names
(read, update, insert, query:<name>...). The index is rebuilt from the run
summaries on the claim: nothing in it is the only copy of a result.
"""

from __future__ import annotations

from typing import Final, Literal

from dbbench_contract.wire import StoredModel

SERIES_LABEL: Final = "dbbench.io/series"
# The point holding a step's own figures (every operation type together).
ALL_OPERATIONS: Final = "all"

Metric = Literal["opsPerSecond", "recordsPerSecond", "p50Ms", "p95Ms", "p99Ms", "p999Ms", "errors"]
# Higher is better for these; for the others (latencies, errors) higher is worse.
HIGHER_IS_BETTER: Final[frozenset[str]] = frozenset({"opsPerSecond", "recordsPerSecond"})
METRICS: Final[tuple[Metric, ...]] = (
    "opsPerSecond", "recordsPerSecond", "p50Ms", "p95Ms", "p99Ms", "p999Ms", "errors",
)  # fmt: skip
Direction = Literal["Regression", "Improvement"]
# The ChangePoint condition's reasons (docs/api.md).
VerdictReason = Literal["Regression", "Improvement", "NoChange", "NotJudged"]


class SeriesPoint(StoredModel):
    """One indexed figure set: one run's step (target, phase, repeat), one operation type."""

    namespace: str
    series: str
    run: str
    uid: str
    # The run's end (its summary's completedAt, RFC 3339): the series' order.
    ended_at: str
    target: str
    phase: str
    repeat: int
    operation_type: str = ALL_OPERATIONS
    ops_per_second: float
    # None: the operation type or phase writes no records.
    records_per_second: float | None = None
    p50_ms: float
    p95_ms: float
    p99_ms: float
    p999_ms: float
    errors: int = 0

    def value(self, metric: Metric) -> float | None:
        return {
            "opsPerSecond": self.ops_per_second,
            "recordsPerSecond": self.records_per_second,
            "p50Ms": self.p50_ms,
            "p95Ms": self.p95_ms,
            "p99Ms": self.p99_ms,
            "p999Ms": self.p999_ms,
            "errors": float(self.errors),
        }[metric]


class ChangePoint(StoredModel):
    """A change found in one metric of one (target, phase, operation type): the
    run where the new level starts, the means of the levels either side
    (over runs; a run's repeats averaged), and the test's p-value."""

    run: str
    uid: str
    ended_at: str
    target: str
    phase: str
    operation_type: str
    metric: Metric
    direction: Direction
    before: float
    after: float
    pvalue: float

    def describe(self) -> str:
        return (
            f"{self.metric} of {self.target}/{self.phase}/{self.operation_type}: "
            f"{self.before:.4g} -> {self.after:.4g} (p={self.pvalue:.2g})"
        )


class Verdict(StoredModel):
    """A run judged against its series (the ChangePoint condition's reason and
    message): a change point starting at this run is a Regression or an
    Improvement by the metric's direction (a Regression wins over an Improvement)."""

    run: str
    uid: str | None = None
    reason: VerdictReason
    message: str
    change_points: tuple[ChangePoint, ...] = ()


class SeriesHistory(StoredModel):
    """The service's answer: the series' points in run order, every change point
    found over the whole series, and the verdict on the asked (or newest) run."""

    namespace: str
    series: str
    significance: float
    min_runs: int
    # The smallest relative change reported (absent in answers before it existed).
    min_change: float = 0.0
    runs: int
    points: tuple[SeriesPoint, ...] = ()
    change_points: tuple[ChangePoint, ...] = ()
    verdict: Verdict | None = None
