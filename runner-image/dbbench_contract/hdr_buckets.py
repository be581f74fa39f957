"""The interval logs' bucket layout (HdrHistogram, lowest 1 us, highest one hour,
3 significant digits) as arithmetic: every value below 2,048 us has its own
bucket; above, each power of two is split in 1,024 equal buckets. The runner
records into these buckets (dbbench_runner.histogram) and the report reads
them back sparsely (dbbench_contract.hdr_sparse).
"""

from __future__ import annotations

from dbbench_contract.latency_log import HIGHEST_US, LOWEST_US, SIGNIFICANT_DIGITS

__all__ = ["HIGHEST_US", "LOWEST_US", "SIGNIFICANT_DIGITS"]

SUB_BITS = 11
SUB_COUNT = 1 << SUB_BITS  # 2048: values below it are exact
HALF = SUB_COUNT >> 1
# Index of HIGHEST_US plus one: the list size.
SIZE = SUB_COUNT + (HIGHEST_US.bit_length() - SUB_BITS) * HALF


def index_of(value: int) -> int:
    if value < SUB_COUNT:
        return value
    shift = value.bit_length() - SUB_BITS
    return SUB_COUNT + (shift - 1) * HALF + (value >> shift) - HALF


def bucket_of(value: int) -> int:
    """The bucket a recorded value lands in, clamped as `record_value` clamps it."""
    if value < SUB_COUNT:
        return max(value, LOWEST_US)
    return index_of(min(value, HIGHEST_US))


def lowest_of(index: int) -> int:
    """The smallest value in a bucket."""
    if index < SUB_COUNT:
        return index
    shift, offset = divmod(index - SUB_COUNT, HALF)
    return (offset + HALF) << (shift + 1)


def highest_of(index: int) -> int:
    """The largest value in a bucket (HDR's highest equivalent value)."""
    if index < SUB_COUNT:
        return index
    shift = (index - SUB_COUNT) // HALF + 1
    return lowest_of(index) + (1 << shift) - 1
