"""indexed4 (field benchmark 2): Number, Number1, Date and ~950 bytes of Data.

Number is uniform in 0..525,599 (minutes in a year), Number1 uniform in
0..999, Date advances one second per record from 2010-01-01 (indexed
descending); `id` is the record number and the key.
"""

from __future__ import annotations

import datetime as dt

from dbbench_runner.datasets.base import Column, FillerPool, Record, derive, stamped

NUMBER_RANGE = 525_600
NUMBER1_RANGE = 1_000
EPOCH = dt.datetime(2010, 1, 1)
# Payload bytes of id (~8), Number, Number1 and Date that are not Data.
FIXED_BYTES = 8 + 6 + 3 + 19


class Indexed4:
    table = "indexed4"
    key_column = "id"
    update_columns = ("Number1", "Data")
    key_order = None  # the key is the record number

    def __init__(self, seed: int, record_size: int) -> None:
        self._seed = seed
        self._pool = FillerPool(seed)
        self._data_length = max(1, record_size - FIXED_BYTES)
        self.columns = (
            Column("id", "key_int"),
            Column("Number", "int", indexed=True),
            Column("Number1", "int", indexed=True),
            Column("Date", "datetime", indexed=True, descending=True),
            Column("Data", "str", self._data_length),
        )

    def key(self, number: int) -> int:
        return number

    def read_key(self, number: int) -> int:
        return self.key(number)

    def record(self, number: int) -> Record:
        return {
            "id": number,
            "Number": derive(self._seed, number, 1) % NUMBER_RANGE,
            "Number1": derive(self._seed, number, 2) % NUMBER1_RANGE,
            "Date": EPOCH + dt.timedelta(seconds=number),
            "Data": self._pool.text(derive(self._seed, number, 3), self._data_length),
        }

    def update(self, number: int, stamp: int) -> Record:
        """Number1 drawn anew (it may repeat); Data carries the stamp, so the row changes."""
        filler = self._pool.text(derive(self._seed, number, 80), self._data_length)
        return {
            "Number1": derive(self._seed, number, 16 + (stamp & 0x3F)) % NUMBER1_RANGE,
            "Data": stamped(stamp, filler, self._data_length),
        }
