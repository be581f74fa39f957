"""ycsb: YCSB's usertable, YCSB_KEY plus field0..field9 (10 x 100 bytes by default).

Keys are "user" + a 64-bit bijective hash of the record number, so they are
unique and spread over the key space like YCSB's hashed inserts.
"""

from __future__ import annotations

from dbbench_runner.datasets.base import Column, FillerPool, Record, derive, splitmix64

FIELD_COUNT = 10
KEY_LENGTH = 24


class Ycsb:
    table = "usertable"
    key_column = "YCSB_KEY"
    update_columns = ("field0",)

    def __init__(self, seed: int, record_size: int) -> None:
        self._seed = seed
        self._pool = FillerPool(seed)
        self._width = max(1, record_size // FIELD_COUNT)
        self.columns = (
            Column("YCSB_KEY", "key_str", KEY_LENGTH),
            *(Column(f"field{i}", "str", self._width) for i in range(FIELD_COUNT)),
        )

    def key(self, number: int) -> str:
        return f"user{splitmix64(number)}"

    def read_key(self, number: int) -> str:
        return self.key(number)

    def record(self, number: int) -> Record:
        record: Record = {"YCSB_KEY": self.key(number)}
        for i in range(FIELD_COUNT):
            record[f"field{i}"] = self._pool.text(derive(self._seed, number, i), self._width)
        return record

    def update(self, number: int, version: int) -> Record:
        salt = 32 + (version & 0x3F)
        return {"field0": self._pool.text(derive(self._seed, number, salt), self._width)}
