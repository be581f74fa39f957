"""The interval logs' bucket layout as arithmetic is HdrHistogram's own (lowest 1 us,
highest one hour, 3 significant digits): the same bucket for every value, the same
bounds, the same number of buckets, and the buckets tile the range."""

from __future__ import annotations

import random

from hdrh.histogram import HdrHistogram

from dbbench_contract.hdr_buckets import (
    HIGHEST_US,
    LOWEST_US,
    SIGNIFICANT_DIGITS,
    SIZE,
    SUB_COUNT,
    bucket_of,
    highest_of,
    index_of,
    lowest_of,
)


def values() -> list[int]:
    """Every exact value, each power of two's neighbours, and a spread of others."""
    rng = random.Random(33)
    edges = [2**k + d for k in range(11, HIGHEST_US.bit_length()) for d in (-1, 0, 1)]
    spread = [rng.randrange(LOWEST_US, HIGHEST_US) for _ in range(5000)]
    return [v for v in [*range(LOWEST_US, 2 * SUB_COUNT), *edges, *spread, HIGHEST_US]
            if v <= HIGHEST_US]  # fmt: skip


def test_every_value_lands_in_hdrhistograms_bucket_with_its_bounds() -> None:
    hdr = HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS)
    checked = values()
    assert len(checked) > 5000
    for value in checked:
        index = index_of(value)
        assert index == hdr.get_counts_array_index(value), value
        assert lowest_of(index) == hdr.get_lowest_equivalent_value(value), value
        assert highest_of(index) == hdr.get_highest_equivalent_value(value), value
    assert hdr.counts_len == SIZE


def test_the_buckets_tile_the_range_without_gap_or_overlap() -> None:
    assert lowest_of(LOWEST_US) == LOWEST_US
    for index in range(LOWEST_US, SIZE - 1):
        assert highest_of(index) + 1 == lowest_of(index + 1), index
    # The last power of two is allocated whole, as HdrHistogram does: one hour fits.
    top = index_of(HIGHEST_US)
    assert top < SIZE
    assert lowest_of(top) <= HIGHEST_US <= highest_of(top)


def test_values_outside_the_range_are_clamped_to_its_ends() -> None:
    assert bucket_of(0) == index_of(LOWEST_US)
    assert bucket_of(HIGHEST_US * 10) == index_of(HIGHEST_US)
    assert bucket_of(1234567) == index_of(1234567)
