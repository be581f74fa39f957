"""flat45 (field benchmark 1): ~45 fields, one is the md5 hex of the record number.

All other fields are constant, as in the original; their length is chosen so
the record's payload is about recordSize bytes.
"""

from __future__ import annotations

import hashlib

from dbbench_runner.datasets.base import Column, FillerPool, Record, derive

FIELDS = 44
KEY_LENGTH = 32


class Flat45:
    table = "flat45"
    key_column = "md5"
    update_columns = ("f01",)

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

    def key(self, number: int) -> str:
        return hashlib.md5(str(number).encode(), usedforsecurity=False).hexdigest()

    def read_key(self, number: int) -> str:
        return self.key(number)

    def record(self, number: int) -> Record:
        record: Record = {"md5": self.key(number)}
        record.update(self._constant)
        return record

    def update(self, number: int, version: int) -> Record:
        width = len(str(self._constant["f01"]))
        return {"f01": self._pool.text(derive(self._seed, number, version & 0xFF), width)}
