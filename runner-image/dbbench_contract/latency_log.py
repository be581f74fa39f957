"""The per-second latency files of a step: ``histograms/<op>.hlog`` and ``series-seconds.csv``.

``histograms/<op>.hlog`` is an HdrHistogram interval log (hdrh's encoding;
microseconds; lowest 1, highest one hour, 3 significant digits): one interval
histogram per wall-clock second in which the operation ran (start = that epoch
second, length 1 s), so HdrHistogram's own tools (HistogramLogAnalyzer, the JS
plotter) read percentiles over time from it, and the sum of the intervals is
the phase's histogram. A merge adds the pods' intervals of the same second
bucket by bucket: p50/p99 per second are exact over pods, never averaged.

Runners before this wrote a single interval covering the measured part (its
length the phase's duration); a step whose per-second histograms do not add up
to its total (such files merged with new ones) keeps that single interval.
Readers add every interval for the totals and take only 1-second intervals as
seconds.

``series-seconds.csv`` has one row per (second, operation type) with the
columns below; its percentiles are those of the same interval histograms.
"""

from __future__ import annotations

from dataclasses import dataclass

LOWEST_US = 1
HIGHEST_US = 3_600_000_000
SIGNIFICANT_DIGITS = 3
INTERVAL_SECONDS = 1.0
# hdrh's writer divides the interval's max by this ratio (microseconds -> ms).
MAX_VALUE_UNIT_RATIO = 1000.0

SERIES_SECONDS_COLUMNS = (
    "epochSecond",
    "operation",
    "operations",
    "errors",
    "meanLatencyMs",
    "latencySumUs",
    # Added with per-second histograms; absent (or empty) in older files.
    "p50LatencyMs",
    "p99LatencyMs",
    "maxLatencyMs",
)


@dataclass(frozen=True)
class Interval:
    """One line of an interval log: when, how long, its max (ms) and the histogram."""

    start: float
    length: float
    max_ms: float
    encoded: str

    @property
    def is_second(self) -> bool:
        return abs(self.length - INTERVAL_SECONDS) < 1e-6

    @property
    def second(self) -> int:
        return round(self.start)


def parse_interval_log(text: str) -> list[Interval]:
    """Every interval of an hlog's text (comments, legend and tags skipped), in file order."""
    found = []
    for line in text.splitlines():
        if not line or line.startswith(("#", '"')):
            continue
        fields = line.split(",")
        if fields[0].startswith("Tag="):
            fields = fields[1:]
        if len(fields) != 4:
            raise ValueError(f"not an interval histogram line: {line[:80]!r}")
        start, length, max_ms, encoded = fields
        found.append(Interval(float(start), float(length), float(max_ms), encoded))
    return found
