"""Shared pieces of the data-set generators: seeded hashing and filler text.

Every value is a pure function of (seed, record number, field salt), so any pod
and any repeat regenerates any record without state (constant memory).
"""

from __future__ import annotations

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
        rng = random.Random(seed)  # noqa: S311 - test data, not secrets
        alphabet = string.ascii_letters + string.digits
        self._text = "".join(rng.choices(alphabet, k=self.SIZE * 2))

    def text(self, seed_value: int, length: int) -> str:
        if length > self.SIZE:
            repeats = length // self.SIZE + 1
            return (self._text[: self.SIZE] * repeats)[:length]
        offset = seed_value % self.SIZE
        return self._text[offset : offset + length]


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

    def key(self, number: int) -> str | int: ...

    def read_key(self, number: int) -> str | int:
        """What a read of record `number` looks up: its key, but for vehicle the
        record's VehicleID (a read fetches that vehicle's latest test)."""
        ...

    def record(self, number: int) -> Record: ...

    def update(self, number: int, version: int) -> Record: ...


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
