"""LatencyHistogram against hdrh's HdrHistogram: same buckets, same percentiles,
exact merge and exact conversion both ways (the .hlog files stay HDR logs)."""

from __future__ import annotations

import random

from hdrh.histogram import HdrHistogram

from dbbench_runner.histogram import (
    HIGHEST_US,
    SIGNIFICANT_DIGITS,
    LatencyHistogram,
    highest_of,
    index_of,
    lowest_of,
)

PERCENTILES = (0.0, 50.0, 90.0, 95.0, 99.0, 99.9, 99.99, 100.0)


def values(seed: int, count: int) -> list[int]:
    rng = random.Random(seed)
    # Mostly sub-millisecond, a long tail up to minutes, and the edges.
    body = [int(rng.lognormvariate(5, 1.5)) + 1 for _ in range(count)]
    return [*body, 1, 2047, 2048, 2049, 4095, 4096, 10**6, HIGHEST_US]


def test_buckets_are_hdr_buckets() -> None:
    hdr = HdrHistogram(1, HIGHEST_US, SIGNIFICANT_DIGITS)
    for value in [*range(1, 20_000), *values(1, 20_000)]:
        index = index_of(value)
        assert index == hdr._counts_index_for(value)
        assert lowest_of(index) == hdr.get_lowest_equivalent_value(value) <= value
        assert highest_of(index) == hdr.get_highest_equivalent_value(value) >= value


def test_percentiles_and_max_equal_hdr() -> None:
    hdr = HdrHistogram(1, HIGHEST_US, SIGNIFICANT_DIGITS)
    mine = LatencyHistogram()
    for value in values(2, 50_000):
        hdr.record_value(value)
        mine.record_value(value)
    assert mine.get_total_count() == hdr.get_total_count()
    assert mine.get_max_value() == hdr.get_max_value()
    for percentile in PERCENTILES:
        assert mine.get_value_at_percentile(percentile) == hdr.get_value_at_percentile(percentile)


def test_merge_is_exact_and_hdr_round_trip_is_lossless() -> None:
    parts = [LatencyHistogram() for _ in range(4)]
    single = LatencyHistogram()
    for index, value in enumerate(values(3, 40_000)):
        parts[index % 4].record_value(value)
        single.record_value(value)
    merged = LatencyHistogram()
    for part in parts:
        merged.add(LatencyHistogram.from_pairs(part.to_pairs(), part.max_value))
    assert merged.equals(single)
    assert merged.get_total_count() == single.get_total_count()
    back = LatencyHistogram.from_hdr(HdrHistogram.decode(single.to_hdr().encode()))
    assert back.equals(single)
    assert back.get_value_at_percentile(99.9) == single.get_value_at_percentile(99.9)


def test_out_of_range_values_are_clamped() -> None:
    histogram = LatencyHistogram()
    histogram.record_value(0)
    histogram.record_value(-5)
    histogram.record_value(HIGHEST_US * 10)
    assert histogram.get_total_count() == 3
    assert histogram.get_value_at_percentile(50) == 1
    assert histogram.get_max_value() == highest_of(index_of(HIGHEST_US))
    assert LatencyHistogram().get_value_at_percentile(99) == 0
