"""The report's summary, latency distribution and p50/p99 over time, checked
against the files of real runs: summary.json and series-seconds.csv."""

from __future__ import annotations

import csv
import json
import re
import statistics
from pathlib import Path
from typing import Any

import pytest

from dbbench_report import read_run, write_report
from dbbench_report.latencies import step_latency
from tests.fixtures.result_sets import ResultSets
from tests.integration.report.test_report import _close, _steps
from tests.support.pages import parse

pytestmark = pytest.mark.integration

# The distribution table's columns and the summary.json key holding the same figure.
SAME_AS_SUMMARY = {"p50": "p50", "p99": "p99", "p99.9": "p999", "max": "max"}


def test_the_distribution_table_is_the_summarys_latency(result_sets: ResultSets) -> None:
    """p50, p99, p99.9 and max of the hlog intervals added up are the step summary's."""
    page = parse(write_report(result_sets.baseline.path).read_text())
    steps = _steps(result_sets.baseline.path)
    assert steps
    for step in steps:
        s = step["summary"]
        where = {"target": step["target"], "phase": step["phase"], "repeat": step["repeat"]}
        assert page.find("distribution", "count", **where).value == repr(s["operations"])
        for shown, key in SAME_AS_SUMMARY.items():
            _close(page.find("distribution", f"ms.{shown}", **where), s["latencyMs"][key], 3)


def test_the_distribution_charts_overlay_the_targets_on_a_nines_axis(
    result_sets: ResultSets,
) -> None:
    html = write_report(result_sets.baseline.path).read_text()
    page = parse(html)
    # One line per (target, repeat): load runs once per target, the others twice.
    assert page.charts["distribution-load"] == 2
    assert page.charts["distribution-oltp"] == 4
    figure = html[html.index('data-chart="distribution-load"') :]
    figure = figure[: figure.index("</figure>")]
    for label in ("0%", "90%", "99%", "safe", "fast", "percentile"):  # log-scale in nines
        assert f">{label}<" in figure or f"> {label}<" in figure, label


def _csv_p99(step_dir: Path) -> dict[int, float]:
    with (step_dir / "series-seconds.csv").open() as handle:
        return {int(r["epochSecond"]): float(r["p99LatencyMs"]) for r in csv.DictReader(handle)}


def test_p99_per_second_is_the_series_files(result_sets: ResultSets) -> None:
    """Insert phases have one operation type: each second's p99 is the row of
    series-seconds.csv (both from the same per-second histograms)."""
    run = read_run(result_sets.baseline.path)
    checked = 0
    for step in run.steps_of(phase="load"):
        latency = step_latency(run.path, step)
        assert latency is not None
        assert latency.seconds
        seconds, p99 = latency.per_second(99.0)
        assert dict(zip(seconds, p99, strict=True)) == _csv_p99(run.path / step.path)
        checked += len(seconds)
    assert checked >= 2
    page = parse(write_report(result_sets.baseline.path).read_text())
    for phase in ("load", "oltp", "queries"):  # p50 and p99 of repeat 1, per target
        assert page.charts[f"p99-{phase}"] == 4


def _mean(steps: list[dict[str, Any]], target: str, phase: str, figure: str) -> list[float]:
    return [
        s["summary"]["throughput"] if figure == "throughput" else s["summary"]["latencyMs"]["p99"]
        for s in steps
        if s["target"] == target and s["phase"] == phase
    ]


@pytest.mark.parametrize("which", ["baseline", "candidate"])
def test_the_summary_names_each_phases_winner_by_the_summaries(
    result_sets: ResultSets, which: str
) -> None:
    path = getattr(result_sets, which).path
    html = write_report(path).read_text()
    assert html.index('data-section="summary"') < html.index('data-section="overview"')
    page = parse(html)
    steps = _steps(path)
    spec = json.loads((path / "summary.json").read_text())["spec"]
    for phase in [p["name"] for p in spec["phases"]]:
        for figure in ("throughput", "p99"):
            values = {t: _mean(steps, t, phase, figure) for t in ("safe", "fast")}
            means = {t: statistics.fmean(v) for t, v in values.items()}
            higher_wins = figure == "throughput"
            best = max(means, key=means.__getitem__) if higher_wins else min(
                means, key=means.__getitem__)  # fmt: skip
            other = "fast" if best == "safe" else "safe"
            where = {"phase": phase, "figure": figure}
            assert page.find("verdict", "winner", **where).text == best
            assert page.find("verdict", "runnerUp", **where).text == other
            digits = 1 if higher_wins else 3
            _close(page.find("verdict", "best", **where), means[best], digits)
            _close(page.find("verdict", "next", **where), means[other], digits)
            margin = abs(means[best] - means[other]) / means[other] * 100
            _close(page.find("verdict", "marginPercent", **where), margin, 1)
            noise = page.find("verdict", "noise", **where).text
            a, b = values[best], values[other]
            if len(a) < 2:
                assert noise == "1 repeat: noise unknown"
            else:
                overlap = min(a) <= max(b) and min(b) <= max(a)
                assert noise == ("within noise" if overlap else "beyond noise")


def test_the_summary_bars_carry_the_repeats_range_as_error_bars(result_sets: ResultSets) -> None:
    html = write_report(result_sets.baseline.path).read_text()
    figure = html[html.index('data-chart="summary-throughput"') :]
    figure = figure[: figure.index("</figure>")]
    # matplotlib draws one target's error bars as a LineCollection: a path per phase.
    collections = re.findall(r'<g id="LineCollection_\d+">(.*?)</g>', figure, re.S)
    assert len(collections) == 2  # safe, fast
    for paths in collections:
        assert paths.count("<path") == 3  # load, oltp, queries
