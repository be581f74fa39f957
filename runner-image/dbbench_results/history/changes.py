"""Change points in a series, and the verdict on one run (pure).

Each (target, phase, operation type, metric) of the series is one sequence of
values in run order, a run's repeats averaged (their range kept beside).
Apache Otava's analysis (`otava.analysis.compute_change_points`: e-divisive
candidates, each kept when a two-sided Student t-test between the levels
either side has a p-value below the significance) finds where the level
changes; the same values always give the same answer (docs/decisions.md).

A run's verdict looks at the series as it was when the run ended (the run and
the runs before it): a change point starting at the run is a Regression or an
Improvement by the metric's direction (ops/s and records/s up is better,
latencies and errors up is worse); a Regression anywhere in the run wins.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from dbbench_contract.history import (
    HIGHER_IS_BETTER,
    METRICS,
    ChangePoint,
    Direction,
    Metric,
    SeriesPoint,
    Verdict,
)

# Otava's own default significance (its analysis and its CLI's --p-value).
DEFAULT_SIGNIFICANCE = 0.001
# The smallest change reported, relative to the level before it (Otava's
# min_magnitude): a paced or otherwise steady figure has so little spread that a
# t-test calls a 0.5% wobble significant, and nobody wants a regression alert for
# it. 5%: below what a rerun on shared hardware reproduces (docs/decisions.md).
DEFAULT_MIN_CHANGE = 0.05
# The fewest runs (the judged one included) a verdict is given on: three before
# it, the fewest whose level has a spread (two degrees of freedom).
DEFAULT_MIN_RUNS = 4
# The newest runs of a series the detector sees, as one window: Otava 0.8.0's
# sliding windows (`split`) misplace a change point found in a window that does
# not start at 0 (its offset is added twice, and the analysis raises ValueError),
# so the series is handed over as a single window of at most this many runs.
WINDOW = 50
MESSAGE_CHANGES = 3


@dataclass(frozen=True)
class Judging:
    significance: float = DEFAULT_SIGNIFICANCE
    min_runs: int = DEFAULT_MIN_RUNS
    min_change: float = DEFAULT_MIN_CHANGE
    window: int = WINDOW


@dataclass(frozen=True)
class RunValue:
    """One run's value of one metric: its repeats' mean and range."""

    run: str
    uid: str
    ended_at: str
    mean: float
    low: float
    high: float


Key = tuple[str, str, str, Metric]  # target, phase, operation type, metric


def run_order(points: Iterable[SeriesPoint]) -> list[SeriesPoint]:
    """One point per run (the first), in the series' order (the points' own)."""
    seen: dict[str, SeriesPoint] = {}
    for point in points:
        seen.setdefault(point.uid, point)
    return list(seen.values())


def metric_series(points: Sequence[SeriesPoint]) -> dict[Key, list[RunValue]]:
    """Every metric's run-ordered values (runs without the metric left out)."""
    grouped: dict[Key, dict[str, list[float]]] = {}
    for point in points:
        for metric in METRICS:
            value = point.value(metric)
            if value is not None:
                key = (point.target, point.phase, point.operation_type, metric)
                grouped.setdefault(key, {}).setdefault(point.uid, []).append(value)
    runs = {p.uid: p for p in run_order(points)}
    return {
        key: [RunValue(runs[uid].run, uid, runs[uid].ended_at, sum(v) / len(v), min(v), max(v))
              for uid, v in by_run.items()]
        for key, by_run in grouped.items()
    }  # fmt: skip


@dataclass(frozen=True)
class Step:
    index: int  # where the new level starts
    before: float
    after: float
    pvalue: float


def steps(
    values: Sequence[float], significance: float, min_change: float = DEFAULT_MIN_CHANGE
) -> list[Step]:
    """Otava's change points in `values` (one window: see WINDOW), each a change of
    more than `min_change` of the level before it."""
    if len(values) < 2 or max(values) == min(values):
        return []  # a constant series has no change (and no spread to test against)
    # Otava imports scipy.stats (~0.45 s of CPU): the results service and the CLI
    # load it when a series is first judged, not at start.
    from otava.analysis import compute_change_points  # noqa: PLC0415

    series = np.asarray(values, dtype=float)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        # A level of identical values has no spread: the t-test's NaN is "not significant".
        warnings.simplefilter("ignore", RuntimeWarning)
        found, _weak = compute_change_points(
            series, window_len=max(2 * len(series), 2), max_pvalue=significance,
            min_magnitude=min_change,
        )  # fmt: skip
    return [
        Step(int(cp.index), float(cp.stats.mean_1), float(cp.stats.mean_2), float(cp.stats.pvalue))
        for cp in found
        if 0 < cp.index < len(series)
        and cp.stats.pvalue < significance
        and cp.stats.change_magnitude() > min_change
    ]


def direction(metric: Metric, before: float, after: float) -> Direction:
    better = (after > before) == (metric in HIGHER_IS_BETTER)
    return "Improvement" if better else "Regression"


def find_changes(points: Sequence[SeriesPoint], judging: Judging) -> list[ChangePoint]:
    """Every change point of the series' newest `judging.window` runs, in run order."""
    found: list[ChangePoint] = []
    for (target, phase, kind, metric), every_run in metric_series(points).items():
        runs = every_run[-judging.window :]
        for step in steps([r.mean for r in runs], judging.significance, judging.min_change):
            if step.after == step.before:
                continue
            at = runs[step.index]
            found.append(ChangePoint(
                run=at.run, uid=at.uid, ended_at=at.ended_at, target=target, phase=phase,
                operation_type=kind, metric=metric,
                direction=direction(metric, step.before, step.after),
                before=step.before, after=step.after, pvalue=step.pvalue,
            ))  # fmt: skip
    order = {p.uid: i for i, p in enumerate(run_order(points))}
    return sorted(found, key=lambda c: (order[c.uid], c.target, c.phase, c.operation_type,
                                        METRICS.index(c.metric)))  # fmt: skip


def _message(changes: Sequence[ChangePoint]) -> str:
    shown = "; ".join(c.describe() for c in changes[:MESSAGE_CHANGES])
    more = len(changes) - MESSAGE_CHANGES
    return shown + (f"; and {more} more" if more > 0 else "")


def verdict(
    points: Sequence[SeriesPoint], judging: Judging, run: str | None = None, series: str = ""
) -> Verdict:
    """The verdict on `run` (its name; the newest run when None) as the series stood
    when it ended."""
    runs = run_order(points)
    if not runs:
        return Verdict(run=run or "", reason="NotJudged",
                       message=f"series {series!r} has no runs in the index")  # fmt: skip
    matching = [i for i, p in enumerate(runs) if p.run == run] if run else [len(runs) - 1]
    if not matching:
        return Verdict(run=run or "", reason="NotJudged",
                       message=f"run {run!r} has no figures in series {series!r}'s index "
                       "(no succeeded step, or its summary was not stored)")  # fmt: skip
    position = matching[-1]
    judged = runs[position]
    if position + 1 < judging.min_runs:
        return Verdict(run=judged.run, uid=judged.uid, reason="NotJudged",
                       message=f"{position + 1} runs in series {series!r} up to this one; "
                       f"{judging.min_runs} needed before judging")  # fmt: skip
    upto = {p.uid for p in runs[: position + 1]}
    changes = [c for c in find_changes([p for p in points if p.uid in upto], judging)
               if c.uid == judged.uid]  # fmt: skip
    regressions = [c for c in changes if c.direction == "Regression"]
    if regressions:
        return Verdict(run=judged.run, uid=judged.uid, reason="Regression",
                       message=_message(regressions), change_points=tuple(changes))  # fmt: skip
    if changes:
        return Verdict(run=judged.run, uid=judged.uid, reason="Improvement",
                       message=_message(changes), change_points=tuple(changes))  # fmt: skip
    return Verdict(
        run=judged.run, uid=judged.uid, reason="NoChange",
        message=f"no change point at this run over {min(position + 1, judging.window)} runs "
        f"of series {series!r} (significance {judging.significance:g})",
    )  # fmt: skip
