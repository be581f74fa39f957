"""Reading an hdrh encoding straight into its non-empty buckets gives what
hdrh's own decoder gives, counts and max, and declines other bucket layouts."""

from __future__ import annotations

import random

import pytest
from hdrh.histogram import HdrHistogram

from dbbench_contract.hdr_sparse import sparse_counts
from dbbench_runner.histogram import HIGHEST_US, LatencyHistogram


def encoded(seed: int, count: int, spread: float) -> HdrHistogram:
    rng = random.Random(seed)
    histogram = LatencyHistogram()
    for _ in range(count):
        histogram.record_value(int(rng.lognormvariate(5, spread)))
    for edge in (1, 2047, 2048, HIGHEST_US)[: seed % 5]:
        histogram.record_value(edge, rng.randint(1, 10**12))  # counts of 6 bytes and more
    return histogram.to_hdr()


@pytest.mark.parametrize("seed", range(12))
def test_sparse_counts_equal_hdrh_decode(seed: int) -> None:
    hdr = encoded(seed, (0, 1, 50, 5000)[seed % 4], 0.5 + seed / 4)
    data = hdr.encode()
    sparse = sparse_counts(data)
    assert sparse is not None
    counts, max_value = sparse
    via_hdrh = LatencyHistogram.from_hdr(HdrHistogram.decode(data))
    assert sorted(counts.items()) == via_hdrh.to_pairs()
    assert max_value == via_hdrh.max_value


def test_other_layouts_are_left_to_hdrh() -> None:
    other = HdrHistogram(1, 10**6, 2)
    other.record_value(1234)
    assert sparse_counts(other.encode()) is None
