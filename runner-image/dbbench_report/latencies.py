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

import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from hdrh.histogram import HdrHistogram

from dbbench_contract.hdr_buckets import highest_of, lowest_of
from dbbench_contract.hdr_sparse import sparse_counts
from dbbench_contract.latency_log import (
    HIGHEST_US,
    LOWEST_US,
    SIGNIFICANT_DIGITS,
    Interval,
    parse_interval_log,
)
from dbbench_contract.layout import histogram_file
from dbbench_report.reading import Step

# Percentiles the distribution table shows (the plot has many more points).
TABLE_PERCENTILES = (50.0, 90.0, 99.0, 99.9, 99.99, 100.0)


def _empty() -> HdrHistogram:
    return HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS)


# Percentiles kept per second (the p50/p99 over time chart).
SECOND_PERCENTILES = (50.0, 99.0)


class Distribution(Protocol):
    """What the sections read of a step's histogram (hdrh's names)."""

    def get_total_count(self) -> int: ...
    def get_value_at_percentile(self, percentile: float) -> int: ...
    def get_max_value(self) -> int: ...


@dataclass(frozen=True)
class SparseHistogram:
    """A histogram of the interval logs' layout as its non-empty buckets, read as
    hdrh reads its dense one (a dense hdrh histogram is two 190 KB arrays in a
    reference cycle: a 100-step report left ~35 MB of them to the collector)."""

    buckets: tuple[tuple[int, int], ...]  # (index, count) by index
    total: int

    @classmethod
    def of(cls, counts: dict[int, int]) -> SparseHistogram:
        buckets = tuple(sorted((i, c) for i, c in counts.items() if c))
        return cls(buckets, sum(c for _, c in buckets))

    def get_total_count(self) -> int:
        return self.total

    def get_value_at_percentile(self, percentile: float) -> int:
        """hdrh's: the rank rounded as it rounds it; the bucket's highest value
        (its lowest at percentile 0); 0 when empty."""
        wanted = max(int((min(percentile, 100.0) * self.total / 100) + 0.5), 1)
        seen = 0
        for index, count in self.buckets:
            seen += count
            if seen >= wanted:
                return highest_of(index) if percentile else lowest_of(index)
        return 0

    def get_max_value(self) -> int:
        return highest_of(self.buckets[-1][0]) if self.buckets else 0


@dataclass(frozen=True)
class StepLatency:
    """A step's whole histogram (all operation types) and, per second, the
    SECOND_PERCENTILES in ms (not the seconds' histograms: ~190 KB each)."""

    total: Distribution
    seconds: dict[int, tuple[float, ...]]

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
        """(epoch second, ms at `percentile`, one of SECOND_PERCENTILES) per second run."""
        index = SECOND_PERCENTILES.index(percentile)
        seconds = sorted(self.seconds)
        return tuple(seconds), tuple(self.seconds[s][index] for s in seconds)


def step_latency(run_dir: Path, step: Step) -> StepLatency | None:
    """The step's histograms, or None when its files predate histograms/."""
    paths = [run_dir / step.path / histogram_file(op)
             for op in sorted(step.summary.operations_by_type) or ["all"]]  # fmt: skip
    found = tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in paths if p.is_file())
    return read_interval_logs(found) if found else None


@functools.lru_cache(maxsize=16)
def read_interval_logs(files: tuple[tuple[str, int, int], ...]) -> StepLatency:
    """Decoded once per render (two sections read each step); a file that
    changes (the service renames a new merge into place) has a new key. Each
    interval is read straight into its non-empty buckets; files of another
    bucket layout go through hdrh's dense histograms."""
    intervals = [
        interval
        for path, _, _ in files
        for interval in parse_interval_log(Path(path).read_text(encoding="utf-8"))
    ]
    decoded = [sparse_counts(interval.encoded.encode()) for interval in intervals]
    if any(d is None for d in decoded):
        return _read_dense(intervals)
    total: dict[int, int] = {}
    by_second: dict[int, dict[int, int]] = {}
    for interval, sparse in zip(intervals, decoded, strict=True):
        assert sparse is not None
        counts = sparse[0]
        _add(total, counts)
        if interval.is_second:
            _add(by_second.setdefault(interval.second, {}), counts)
    whole = SparseHistogram.of(total)
    seconds: dict[int, tuple[float, ...]] = {}
    counted = 0
    for second, counts in by_second.items():
        histogram = SparseHistogram.of(counts)
        counted += histogram.total
        seconds[second] = tuple(
            float(histogram.get_value_at_percentile(p)) / 1000.0 for p in SECOND_PERCENTILES
        )
    if counted != whole.total:
        seconds = {}  # older single-interval files merged with new ones: totals only
    return StepLatency(whole, seconds)


def _add(into: dict[int, int], counts: dict[int, int]) -> None:
    for index, count in counts.items():
        into[index] = into.get(index, 0) + count


def _read_dense(intervals: list[Interval]) -> StepLatency:
    """As read_interval_logs, through hdrh (histograms of another layout). One
    scratch histogram adds up each second's operation types in turn."""
    total = _empty()
    by_second: dict[int, list[str]] = {}
    for interval in intervals:
        total.decode_and_add(interval.encoded)
        if interval.is_second:
            by_second.setdefault(interval.second, []).append(interval.encoded)
    seconds: dict[int, tuple[float, ...]] = {}
    scratch = _empty()
    counted = 0
    for second, encoded in by_second.items():
        scratch.reset()
        for one in encoded:
            scratch.decode_and_add(one)
        counted += scratch.get_total_count()
        seconds[second] = tuple(
            float(scratch.get_value_at_percentile(p)) / 1000.0 for p in SECOND_PERCENTILES
        )
    if counted != total.get_total_count():
        seconds = {}  # older single-interval files merged with new ones: totals only
    return StepLatency(total, seconds)
