"""Shared pieces of the data-set generators: seeded hashing and filler text.

Every value is a pure function of (seed, record number, field salt), so any pod
and any repeat regenerates any record without state (constant memory).
"""

from __future__ import annotations

import functools
import random
import string
from dataclasses import dataclass
from typing import Literal, Protocol

MASK64 = (1 << 64) - 1
Record = dict[str, object]
ColumnKind = Literal["key_str", "key_int", "str", "int", "datetime", "tags", "items"]


def splitmix64(value: int) -> int:
    """The splitmix64 finalizer: a bijection on 64-bit integers with good mixing."""
    z = (value + 0x9E3779B97F4A7C15) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def derive(seed: int, number: int, salt: int) -> int:
    """A 64-bit value that depends only on (seed, record number, salt)."""
    return splitmix64((seed * 0x2545F4914F6CDD1D) ^ (number * 0x9E3779B1) ^ (salt << 56))


class FillerPool:
    """A fixed block of seeded text; fields are slices of it at derived offsets.

    Slicing a 64 KiB string is far cheaper than drawing characters one by one,
    and the block depends only on the seed.
    """

    SIZE = 65_536

    def __init__(self, seed: int) -> None:
        self._text = _filler_text(seed, self.SIZE * 2)

    def text(self, seed_value: int, length: int) -> str:
        if length > self.SIZE:
            repeats = length // self.SIZE + 1
            return (self._text[: self.SIZE] * repeats)[:length]
        offset = seed_value % self.SIZE
        return self._text[offset : offset + length]


@functools.lru_cache(maxsize=8)
def _filler_text(seed: int, length: int) -> str:
    """The pool's text, drawn once per seed per process (~11 ms of CPU): every
    generator of that seed in the process shares it (the step's own, and in a
    long-lived caller every later step's: the tests run hundreds). An immutable
    string, a pure function of the seed."""
    rng = random.Random(seed)  # noqa: S311 - test data, not secrets
    alphabet = string.ascii_letters + string.digits
    return "".join(rng.choices(alphabet, k=length))


# Write stamps (keyspace.write_stamp) in values: the stamp's base-36 digits and a
# mark no generated value holds (they are alphanumeric), so a stamped value
# differs from every loaded value and from every other stamp's value.
STAMP_MARK = "-"
STAMP_LIMIT = 1 << 62
# 12 base-36 digits hold every stamp below STAMP_LIMIT, plus the mark.
STAMP_CHARS = 13
_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def stamp_text(stamp: int) -> str:
    """'<base-36 digits>-': injective in the stamp, at most STAMP_CHARS characters."""
    if not 0 <= stamp < STAMP_LIMIT:
        raise ValueError(f"write stamp {stamp} outside 0..2**62")
    digits = ""
    while True:
        stamp, digit = divmod(stamp, 36)
        digits = _BASE36[digit] + digits
        if not stamp:
            return digits + STAMP_MARK


def stamped(stamp: int, filler: str, width: int) -> str:
    """`width` characters: the stamp's text, then filler (`width` >= STAMP_CHARS)."""
    if width < STAMP_CHARS:
        raise ValueError(f"a stamped value needs {STAMP_CHARS} characters, not {width}")
    return (stamp_text(stamp) + filler)[:width]


def stamp_columns(names: list[str], widths: list[int]) -> int:
    """How many leading columns together hold STAMP_CHARS characters."""
    total = 0
    for count, width in enumerate(widths, start=1):
        total += width
        if total >= STAMP_CHARS:
            return count
    raise ValueError(f"columns {names} hold fewer than {STAMP_CHARS} characters")


def split_text(text: str, widths: list[int]) -> list[str]:
    """`text` cut into consecutive pieces of the given widths."""
    pieces, start = [], 0
    for width in widths:
        pieces.append(text[start : start + width])
        start += width
    return pieces


class HashedKeyOrder(Protocol):
    """The sort order of a shape whose keys are hashes of the record number.

    The table is clustered by its key (InnoDB's primary key; MongoDB's _id
    index), so a hot range that should be contiguous on disk is a range of
    keys, not of record numbers: `sort_value` orders records as the database
    orders their keys, `quantile(f)` is the sort value below which a fraction
    f of all possible keys fall.
    """

    def sort_value(self, number: int) -> bytes: ...

    def quantile(self, fraction: float) -> bytes: ...


@dataclass(frozen=True)
class Column:
    name: str
    kind: ColumnKind
    # Maximum length for strings (bytes); ignored for numbers and dates.
    size: int = 0
    indexed: bool = False
    descending: bool = False


class DatasetGenerator(Protocol):
    """A shape: its table/collection, columns, and records by number (1..N)."""

    @property
    def table(self) -> str: ...

    @property
    def key_column(self) -> str: ...

    @property
    def columns(self) -> tuple[Column, ...]: ...

    @property
    def update_columns(self) -> tuple[str, ...]: ...

    @property
    def key_order(self) -> HashedKeyOrder | None:
        """None when keys sort as record numbers do (int keys)."""
        ...

    def key(self, number: int) -> str | int: ...

    def read_key(self, number: int) -> str | int:
        """What a read of record `number` looks up: its key, but for vehicle the
        record's VehicleID (a read fetches that vehicle's latest test)."""
        ...

    def record(self, number: int) -> Record: ...

    def update(self, number: int, stamp: int) -> Record:
        """New values of the update columns for write `stamp` (keyspace.write_stamp):
        different from the loaded record's and from those of every other stamp,
        so an update always changes the stored row."""
        ...


def record_size(record: Record) -> int:
    """Payload bytes of a record: the sum of its values' text lengths."""
    total = 0
    for value in record.values():
        if isinstance(value, list):
            total += sum(
                record_size(item) if isinstance(item, dict) else len(str(item)) for item in value
            )
        else:
            total += len(str(value))
    return total
