"""A latency histogram cheap enough to record on every operation.

Integer microseconds in log-linear buckets: every value below 2,048 µs has its
own bucket; above, each power of two is split in 1,024 equal buckets (relative
error below 0.1%). That is exactly the bucket layout of an HdrHistogram with
3 significant digits and a lowest value of 1, so conversion to and from the
HDR log files (histograms/<op>.hlog) is exact, and so is merging: counts are
added bucket by bucket.

Why not hdrh's HdrHistogram on the hot path: its record_value is four Python
calls deep (~1.3 µs of the runner's ~5.8 µs per no-op operation, profiled);
here a point read of a few hundred µs costs one comparison and one list
increment.
"""

from __future__ import annotations

import ctypes
import sys
from array import array
from collections.abc import Iterable, Iterator, Mapping
from itertools import chain, compress

from hdrh.histogram import HdrHistogram

from dbbench_contract.hdr_buckets import (
    HALF,
    HIGHEST_US,
    LOWEST_US,
    SIGNIFICANT_DIGITS,
    SIZE,
    SUB_BITS,
    SUB_COUNT,
    bucket_of,
    highest_of,
    index_of,
    lowest_of,
)

# The bucket layout and its arithmetic are the interval logs' format: they live
# in the contract (the report reads the logs too); re-exported for the runner.
__all__ = [
    "HALF",
    "HIGHEST_US",
    "LOWEST_US",
    "SIGNIFICANT_DIGITS",
    "SIZE",
    "SUB_BITS",
    "SUB_COUNT",
    "LatencyHistogram",
    "bucket_of",
    "highest_of",
    "index_of",
    "lowest_of",
    "new_hdr",
    "refill_hdr",
]


class LatencyHistogram:
    """Counts per bucket; values are clamped to [LOWEST_US, HIGHEST_US]."""

    __slots__ = ("counts", "max_value", "total")

    def __init__(self) -> None:
        self.counts = [0] * SIZE
        self.total = 0
        self.max_value = 0

    def record_value(self, value: int, count: int = 1) -> None:
        if value < SUB_COUNT:
            value = max(value, LOWEST_US)
            self.counts[value] += count
        else:
            value = min(value, HIGHEST_US)
            self.counts[index_of(value)] += count
        self.total += count
        if value > self.max_value:  # noqa: PLR1730 - a call to max() costs more per op
            self.max_value = value

    def get_total_count(self) -> int:
        return self.total

    def get_max_value(self) -> int:
        return highest_of(index_of(self.max_value)) if self.max_value else 0

    def get_value_at_percentile(self, percentile: float) -> int:
        """HdrHistogram's definition: the highest equivalent value of the bucket
        holding the ceil-rounded rank."""
        if self.total == 0:
            return 0
        wanted = max(1, int(min(percentile, 100.0) / 100.0 * self.total + 0.5))
        seen = 0
        for index, count in enumerate(self.counts):
            seen += count
            if seen >= wanted:
                return highest_of(index)
        return self.get_max_value()

    def add(self, other: LatencyHistogram) -> None:
        self.add_counts(other.buckets(), other.total, other.max_value)

    def add_counts(self, buckets: Iterable[tuple[int, int]], total: int, max_value: int) -> None:
        """Add (index, count) buckets holding `total` values at most `max_value`:
        what costs is the buckets given, not the histogram's size."""
        mine = self.counts
        for index, count in buckets:
            mine[index] += count
        self.total += total
        self.max_value = max(self.max_value, max_value)

    def buckets(self) -> Iterator[tuple[int, int]]:
        """(index, count) of the non-empty buckets."""
        counts = self.counts
        # compress() finds them in C: a Python-level walk of all SIZE buckets
        # was most of a step merge's time.
        return ((i, counts[i]) for i in compress(range(SIZE), counts))

    def equals(self, other: LatencyHistogram) -> bool:
        return self.counts == other.counts and self.get_max_value() == other.get_max_value()

    def to_pairs(self) -> list[tuple[int, int]]:
        return list(self.buckets())

    def packed(self) -> bytes:
        """The non-empty buckets as int64 (index, count) pairs: 16 bytes a bucket
        where to_pairs' tuples take ~40 (a worker's wire to the parent held one
        per bucket of every type, more the longer the phase's latencies spread)."""
        return array("q", chain.from_iterable(self.buckets())).tobytes()

    @classmethod
    def unpacked(cls, data: bytes, max_value: int) -> LatencyHistogram:
        """The histogram of `packed` bytes."""
        flat = array("q")
        flat.frombytes(data)
        return cls.from_pairs(zip(flat[0::2], flat[1::2], strict=True), max_value)

    @classmethod
    def from_pairs(
        cls, pairs: Iterable[tuple[int, int]] | list[list[int]], max_value: int
    ) -> LatencyHistogram:
        histogram = cls()
        for index, count in pairs:
            histogram.counts[index] += count
            histogram.total += count
        histogram.max_value = max_value
        return histogram

    @classmethod
    def from_counts(cls, counts: dict[int, int]) -> LatencyHistogram:
        """From sparse {bucket index: count} (a second's counts); max is its top bucket's."""
        histogram = cls.from_pairs(sorted(counts.items()), 0)
        top = max((i for i, c in counts.items() if c), default=None)
        histogram.max_value = 0 if top is None else highest_of(top)
        return histogram

    def to_hdr(self) -> HdrHistogram:
        hdr = HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS)
        for index, count in self.buckets():
            hdr.record_value(lowest_of(index), count)
        return hdr

    @classmethod
    def from_hdr(cls, hdr: HdrHistogram) -> LatencyHistogram:
        if hdr.counts_len == SIZE and hdr.sub_bucket_count == SUB_COUNT:
            # The same bucket layout (see the module's doc): copy the counts; walking
            # hdrh's recorded iterator costs ~100 ms per histogram, this ~3 ms.
            counts = hdr.counts
            pairs = [(i, c) for i, c in enumerate(counts[:SIZE]) if c]
            return cls.from_pairs(pairs, hdr.get_max_value() if pairs else 0)
        histogram = cls()
        for item in hdr.get_recorded_iterator():
            histogram.record_value(item.value_iterated_to, item.count_at_value_iterated_to)
        return histogram


def new_hdr() -> HdrHistogram:
    """An empty hdrh histogram of our bucket layout."""
    return HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS)


def refill_hdr(hdr: HdrHistogram, counts: Mapping[int, int]) -> HdrHistogram:
    """`hdr` (of our layout) emptied, then holding sparse {bucket: count}: as
    LatencyHistogram.from_counts(counts).to_hdr(), without a new pair of dense
    arrays per call. An interval log writes one histogram per second; new ones
    (two 190 KB arrays each, in a reference cycle only the collector frees)
    piled up until the next collection."""
    # What hdr.reset() does, but its Python loop over 23,552 counts costs ~1 ms.
    ctypes.memset(ctypes.addressof(hdr.counts), 0, ctypes.sizeof(hdr.counts))
    hdr.total_count = 0
    hdr.min_value = sys.maxsize
    hdr.max_value = 0
    for index, count in sorted(counts.items()):
        if count:
            hdr.record_value(lowest_of(index), count)
    return hdr
