"""Change points with Apache Otava's analysis (dbbench_results.history.changes):
known steps found at their run and in their direction, pure noise judged
unchanged at the default significance, too-short series not judged."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dbbench_contract.history import SeriesPoint
from dbbench_results.history.changes import (
    DEFAULT_SIGNIFICANCE,
    Judging,
    find_changes,
    metric_series,
    verdict,
)

JUDGING = Judging()


def series_points(speeds: Sequence[float], seed: int = 7, noise: float = 0.02,
                  repeats: int = 2) -> list[SeriesPoint]:  # fmt: skip
    """Runs of one step whose speed (1.0: 1000 ops/s, p99 2 ms) is `speeds[i]` times
    a repeat's noise: throughput scales with it, latencies inversely."""
    rng = np.random.default_rng(seed)
    points = []
    for i, speed in enumerate(speeds):
        for repeat in range(1, repeats + 1):
            s = speed * (1 + noise * rng.standard_normal())
            points.append(SeriesPoint(
                namespace="bench", series="nightly", run=f"nightly-{i}", uid=f"uid-{i}",
                ended_at=f"2026-11-{1 + i // 24:02d}T{i % 24:02d}:00:00Z", target="db",
                phase="reads", repeat=repeat, ops_per_second=1000 * s, p50_ms=0.5 / s,
                p95_ms=1.5 / s, p99_ms=2.0 / s, p999_ms=5.0 / s, errors=0,
            ))  # fmt: skip
    return points


def test_a_step_is_found_at_its_run_in_each_metrics_direction() -> None:
    points = series_points([1.0] * 12 + [0.7] * 8)
    changes = find_changes(points, JUDGING)
    by_metric = {c.metric: c for c in changes}
    assert set(by_metric) == {"opsPerSecond", "p50Ms", "p95Ms", "p99Ms", "p999Ms"}
    assert {c.run for c in changes} == {"nightly-12"}
    assert {c.direction for c in changes} == {"Regression"}  # slower, higher latencies
    ops = by_metric["opsPerSecond"]
    assert 970 < ops.before < 1030
    assert 670 < ops.after < 730
    assert ops.pvalue < DEFAULT_SIGNIFICANCE
    faster = find_changes(series_points([1.0] * 10 + [1.3] * 6, seed=3), JUDGING)
    assert {(c.run, c.direction) for c in faster} == {("nightly-10", "Improvement")}


def test_two_steps_are_both_found() -> None:
    changes = find_changes(series_points([1.0] * 10 + [0.6] * 10 + [1.0] * 10), JUDGING)
    ops = [(c.run, c.direction) for c in changes if c.metric == "opsPerSecond"]
    assert ops == [("nightly-10", "Regression"), ("nightly-20", "Improvement")]


def test_the_newest_run_is_judged_by_what_changed_at_it() -> None:
    slower = verdict(series_points([1.0] * 9 + [0.5]), JUDGING, series="nightly")
    assert (slower.run, slower.reason) == ("nightly-9", "Regression")
    assert "opsPerSecond of db/reads/all: " in slower.message
    assert " -> " in slower.message
    assert "and 2 more" in slower.message  # five metrics changed, three shown
    faster = verdict(series_points([1.0] * 9 + [2.0]), JUDGING)
    assert faster.reason == "Improvement"
    assert {c.direction for c in faster.change_points} == {"Improvement"}
    # Asked about an earlier run: the series as it stood then.
    before = verdict(series_points([1.0] * 9 + [0.5]), JUDGING, run="nightly-8")
    assert (before.run, before.reason) == ("nightly-8", "NoChange")
    assert "over 9 runs" in before.message


def _noise_verdicts(judging: Judging) -> list[str]:
    """The newest run's verdict on each of 200 series of 4 to 29 runs of pure noise
    (3% per repeat, two repeats a run), one fixed seed each."""
    rng = np.random.default_rng(31)
    reasons = []
    for n in range(200):
        points = series_points([1.0] * int(rng.integers(4, 30)), seed=1000 + n, noise=0.03)
        reasons.append(verdict(points, judging).reason)
    return reasons


def test_pure_noise_raises_no_verdict_at_a_strict_significance() -> None:
    assert set(_noise_verdicts(Judging(significance=0.0001))) == {"NoChange"}


def test_pure_noise_rarely_raises_one_at_the_default_significance() -> None:
    # The detector tests the best split of each series, not one chosen in
    # advance: a verdict's false-alarm rate is above the nominal significance
    # (measured here without the smallest change: 1 series of 200, an
    # "Improvement" of 4% at p=0.00046). The default 5% smallest change drops it.
    reasons = _noise_verdicts(Judging(min_change=0.0))
    assert reasons.count("NoChange") >= 198, reasons
    assert set(_noise_verdicts(JUDGING)) == {"NoChange"}


def test_a_significant_but_small_change_is_not_reported() -> None:
    """A steady figure (spread 0.1%) that drops 2%: the t-test calls it
    significant, and only the smallest change (5% by default) keeps it out."""
    small = series_points([1.0] * 8 + [0.98] * 4, noise=0.001)
    assert {c.run for c in find_changes(small, Judging(min_change=0.0))} == {"nightly-8"}
    assert find_changes(small, JUDGING) == []
    assert verdict(small, JUDGING, "nightly-11").reason == "NoChange"
    # A 10% drop of the same steady figure is reported at its run.
    large = series_points([1.0] * 8 + [0.9] * 4, noise=0.001)
    assert {c.run for c in find_changes(large, JUDGING)} == {"nightly-8"}


def test_a_series_too_short_is_not_judged() -> None:
    short = verdict(series_points([1.0, 1.0, 0.2]), JUDGING, series="nightly")
    assert short.reason == "NotJudged"
    assert short.message == "3 runs in series 'nightly' up to this one; 4 needed before judging"
    assert verdict([], JUDGING, series="nightly").reason == "NotJudged"
    absent = verdict(series_points([1.0] * 5), JUDGING, run="other", series="nightly")
    assert (absent.reason, absent.run) == ("NotJudged", "other")
    assert verdict(series_points([1.0] * 5), Judging(min_runs=6)).reason == "NotJudged"


def test_a_runs_repeats_are_averaged_and_their_range_kept() -> None:
    points = series_points([1.0, 1.0], repeats=3)
    ops = metric_series(points)[("db", "reads", "all", "opsPerSecond")]
    first = [p.ops_per_second for p in points if p.run == "nightly-0"]
    assert [r.run for r in ops] == ["nightly-0", "nightly-1"]
    assert ops[0].mean == sum(first) / 3
    assert (ops[0].low, ops[0].high) == (min(first), max(first))
    # Records/s is left out where no point has it; a constant series has no change.
    assert ("db", "reads", "all", "recordsPerSecond") not in metric_series(points)
    assert not [c for c in find_changes(series_points([1.0] * 8), JUDGING) if c.metric == "errors"]


def test_the_same_series_gets_the_same_verdict_every_time() -> None:
    points = series_points([1.0] * 15 + [0.8] * 3, seed=11)
    assert find_changes(points, JUDGING) == find_changes(points, JUDGING)
    assert verdict(points, JUDGING) == verdict(points, JUDGING)
