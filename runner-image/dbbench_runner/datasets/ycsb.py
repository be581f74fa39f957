"""ycsb: YCSB's usertable, YCSB_KEY plus field0..field9 (10 x 100 bytes by default).

Keys are "user" + a 64-bit bijective hash of the record number, so they are
unique and spread over the key space like YCSB's hashed inserts. The table,
clustered by them, orders records as the hashes' decimal strings compare
(DecimalKeyOrder). An update rewrites field0 (and field1 below 130-byte records,
too short for a write stamp).
"""

from __future__ import annotations

import functools

from dbbench_runner.datasets.base import (
    Column,
    FillerPool,
    Record,
    derive,
    split_text,
    splitmix64,
    stamp_columns,
    stamped,
)

FIELD_COUNT = 10
KEY_LENGTH = 24
HASH_SPACE = 1 << 64
# Decimal strings of 64-bit values have at most 20 digits.
MAX_DIGITS = 20


def count_below(threshold: str) -> int:
    """How many 64-bit values u have str(u) < threshold (strings compared as text)."""
    total = 0
    for length in range(1, MAX_DIGITS + 1):
        low = 0 if length == 1 else 10 ** (length - 1)
        high = min(10**length, HASH_SPACE)
        if length <= len(threshold):
            # s < t: s below t's prefix, or s equal to it and t longer (a prefix sorts first)
            bound = int(threshold[:length]) + (1 if length < len(threshold) else 0)
        else:
            # s longer than t: below t only when its first len(t) digits are
            bound = int(threshold) * 10 ** (length - len(threshold))
        total += max(0, min(bound, high) - low)
    return total


@functools.lru_cache(maxsize=64)
def decimal_quantile(fraction: float) -> str:
    """The smallest 20-digit string below which `fraction` of all 64-bit values'
    decimal strings sort (a binary search over count_below, ~70 steps)."""
    wanted = fraction * HASH_SPACE
    low, high = 0, 10**MAX_DIGITS - 1
    while low < high:
        middle = (low + high) // 2
        if count_below(f"{middle:0{MAX_DIGITS}d}") >= wanted:
            high = middle
        else:
            low = middle + 1
    return f"{low:0{MAX_DIGITS}d}"


class DecimalKeyOrder:
    """Keys "user<decimal hash>" sort as the decimal strings do (the prefix is common)."""

    def sort_value(self, number: int) -> bytes:
        return b"%d" % splitmix64(number)

    def quantile(self, fraction: float) -> bytes:
        return decimal_quantile(fraction).encode()


class Ycsb:
    table = "usertable"
    key_column = "YCSB_KEY"
    key_order = DecimalKeyOrder()

    def __init__(self, seed: int, record_size: int) -> None:
        self._seed = seed
        self._pool = FillerPool(seed)
        self._width = max(1, record_size // FIELD_COUNT)
        names = [f"field{i}" for i in range(FIELD_COUNT)]
        self.columns = (
            Column("YCSB_KEY", "key_str", KEY_LENGTH),
            *(Column(name, "str", self._width) for name in names),
        )
        self.update_columns = tuple(names[: stamp_columns(names, [self._width] * FIELD_COUNT)])

    def key(self, number: int) -> str:
        return f"user{splitmix64(number)}"

    def read_key(self, number: int) -> str:
        return self.key(number)

    def record(self, number: int) -> Record:
        record: Record = {"YCSB_KEY": self.key(number)}
        for i in range(FIELD_COUNT):
            record[f"field{i}"] = self._pool.text(derive(self._seed, number, i), self._width)
        return record

    def update(self, number: int, stamp: int) -> Record:
        widths = [self._width] * len(self.update_columns)
        width = sum(widths)
        text = stamped(stamp, self._pool.text(derive(self._seed, number, 32), width), width)
        return dict(zip(self.update_columns, split_text(text, widths), strict=True))
