"""Latency as latency people read it: the percentile distribution of a step
(HdrHistogram's plot: latency against percentile, the percentile axis in
"nines") and p50/p99 per wall-clock second, both from the step's
``histograms/<op>.hlog`` interval logs, every operation type added bucket by
bucket (hdrh), so the distribution's p50/p99/max are the summary's.

Steps written before per-second histograms have one interval covering the
phase: they give a distribution and no seconds; steps without .hlog files
give neither (None).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from hdrh.histogram import HdrHistogram

from dbbench_contract.latency_log import (
    HIGHEST_US,
    LOWEST_US,
    SIGNIFICANT_DIGITS,
    parse_interval_log,
)
from dbbench_contract.layout import histogram_file
from dbbench_report.reading import Step

# Percentiles the distribution table shows (the plot has many more points).
TABLE_PERCENTILES = (50.0, 90.0, 99.0, 99.9, 99.99, 100.0)


def _empty() -> HdrHistogram:
    return HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS)


@dataclass(frozen=True)
class StepLatency:
    """A step's whole histogram and its per-second ones (all operation types)."""

    total: HdrHistogram
    seconds: dict[int, HdrHistogram]

    def ms_at(self, percentile: float) -> float:
        """HdrHistogram's value at `percentile` (100: the max), in milliseconds."""
        if percentile >= 100.0:
            return float(self.total.get_max_value()) / 1000.0
        return float(self.total.get_value_at_percentile(percentile)) / 1000.0

    def curve(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """(1 / (1 - p), ms) from p = 0 to the last whole rank, ten points a "nine"
        (the x HdrHistogram's plotter uses: 10 is 90%, 100 is 99%), then the max."""
        count = self.total.get_total_count()
        if count == 0:
            return (), ()
        nines = math.log10(count)
        xs, ys = [], []
        steps = int(nines * 10)
        for step in range(steps + 1):
            p = 100.0 * (1.0 - 10.0 ** (-step / 10.0))
            xs.append(10.0 ** (step / 10.0))
            ys.append(self.ms_at(p))
        xs.append(10.0**nines)  # the max closes the curve at 1 / (1 - (n-1)/n)
        ys.append(self.ms_at(100.0))
        return tuple(xs), tuple(ys)

    def per_second(self, percentile: float) -> tuple[tuple[int, ...], tuple[float, ...]]:
        """(epoch second, ms at `percentile`) for every second the step ran."""
        seconds = sorted(self.seconds)
        return tuple(seconds), tuple(
            float(self.seconds[s].get_value_at_percentile(percentile)) / 1000.0 for s in seconds
        )


def step_latency(run_dir: Path, step: Step) -> StepLatency | None:
    """The step's histograms, or None when its files predate histograms/."""
    total = _empty()
    seconds: dict[int, HdrHistogram] = {}
    found = False
    for operation in sorted(step.summary.operations_by_type) or ["all"]:
        path = run_dir / step.path / histogram_file(operation)
        if not path.is_file():
            continue
        found = True
        for interval in parse_interval_log(path.read_text(encoding="utf-8")):
            decoded = HdrHistogram.decode(interval.encoded)
            total.add(decoded)
            if interval.is_second:
                seconds.setdefault(interval.second, _empty()).add(decoded)
    if not found:
        return None
    if sum(h.get_total_count() for h in seconds.values()) != total.get_total_count():
        seconds = {}  # older single-interval files merged with new ones: totals only
    return StepLatency(total, seconds)
