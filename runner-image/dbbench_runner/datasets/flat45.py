"""flat45 (field benchmark 1): ~45 fields, one is the md5 hex of the record number.

All other fields are constant, as in the original; their length is chosen so
the record's payload is about recordSize bytes. An update rewrites f01 (and
the next fields too when f01 alone is too short for a write stamp, at record
sizes below about 600 bytes).

Keys are md5 hex strings: the table, clustered by them, orders records as the
128-bit numbers their digests are (Md5KeyOrder), not by record number.
"""

from __future__ import annotations

import hashlib

from dbbench_runner.datasets.base import (
    Column,
    FillerPool,
    Record,
    derive,
    split_text,
    stamp_columns,
    stamped,
)

FIELDS = 44
KEY_LENGTH = 32


class Md5KeyOrder:
    """md5 hex keys sort as their digests do (hex digits compare like the nibbles)."""

    def sort_value(self, number: int) -> bytes:
        return hashlib.md5(b"%d" % number, usedforsecurity=False).digest()

    def quantile(self, fraction: float) -> bytes:
        return min(int(fraction * 2**128), 2**128 - 1).to_bytes(16, "big")


class Flat45:
    table = "flat45"
    key_column = "md5"
    key_order = Md5KeyOrder()

    def __init__(self, seed: int, record_size: int) -> None:
        self._seed = seed
        self._pool = FillerPool(seed)
        width = max(1, (record_size - KEY_LENGTH) // FIELDS)
        extra = max(0, record_size - KEY_LENGTH - width * FIELDS)
        names = [f"f{i:02d}" for i in range(1, FIELDS + 1)]
        # Spread the remainder over the first fields so the total is exact.
        widths = [width + (1 if i < extra else 0) for i in range(FIELDS)]
        self._constant: Record = {
            name: self._pool.text(i * 7919, w)
            for i, (name, w) in enumerate(zip(names, widths, strict=True))
        }
        self.columns = (
            Column("md5", "key_str", KEY_LENGTH),
            *(Column(n, "str", w) for n, w in zip(names, widths, strict=True)),
        )
        count = stamp_columns(names, widths)
        self.update_columns = tuple(names[:count])
        self._update_widths = widths[:count]

    def key(self, number: int) -> str:
        return hashlib.md5(str(number).encode(), usedforsecurity=False).hexdigest()

    def read_key(self, number: int) -> str:
        return self.key(number)

    def record(self, number: int) -> Record:
        record: Record = {"md5": self.key(number)}
        record.update(self._constant)
        return record

    def update(self, number: int, stamp: int) -> Record:
        width = sum(self._update_widths)
        text = stamped(stamp, self._pool.text(derive(self._seed, number, 9), width), width)
        pieces = split_text(text, self._update_widths)
        return dict(zip(self.update_columns, pieces, strict=True))
