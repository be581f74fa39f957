"""news (field benchmark 5): news items with categories, users and a Tags array.

- ID: the record number (key);
- Title: 20-30 characters;
- CategoryID: 20,000 categories of 10-100 consecutive records each (sizes are
  seeded; past the last category the layout repeats);
- CreateTime: 2010-01-01 00:00:00 UTC plus one second per record (epoch seconds);
- UserID: 10,000 users, derived from the category by modulo;
- Tags: 2-6 distinct strings, the first taken from the record (its title's
  first eight characters, lower-cased), the rest from a pool of 17,000;
- Source, SourceUrl: strings; Status: 0..2.
recordSize does not apply: the shape fixes its fields.
"""

from __future__ import annotations

import bisect
import itertools

from dbbench_runner.datasets.base import Column, FillerPool, Record, derive, stamped

CATEGORIES = 20_000
USERS = 10_000
TAG_POOL = 17_000
# Coprime with TAG_POOL, so pool picks within one record are distinct.
TAG_STRIDE = 7_919
CREATE_TIME_BASE = 1_262_304_000
SOURCES = 100


class News:
    table = "news"
    key_column = "ID"
    update_columns = ("CreateTime", "Title", "Source", "SourceUrl", "Status")
    key_order = None  # the key is the record number

    def __init__(self, seed: int, record_size: int = 0, *, tags_index: bool = True) -> None:
        del record_size  # fixed by the shape
        self._seed = seed
        self._pool = FillerPool(seed)
        sizes = [10 + derive(seed, c, 7) % 91 for c in range(CATEGORIES)]
        # 20,000 ints: constant in the data-set size.
        self._ends = list(itertools.accumulate(sizes))
        self.columns = (
            Column("ID", "key_int"),
            Column("Title", "str", 30),
            Column("CategoryID", "int", indexed=True),
            Column("CreateTime", "int", indexed=True),
            Column("UserID", "int", indexed=True),
            # Benchmark 5 runs with and without this index (dataset.tagsIndex).
            Column("Tags", "tags", 16, indexed=tags_index),
            Column("Source", "str", 16),
            Column("SourceUrl", "str", 64),
            Column("Status", "int"),
        )

    def key(self, number: int) -> int:
        return number

    def read_key(self, number: int) -> int:
        return self.key(number)

    def category(self, number: int) -> int:
        position = (number - 1) % self._ends[-1]
        return bisect.bisect_right(self._ends, position) + 1

    def _title(self, number: int, salt: int) -> str:
        length = 20 + derive(self._seed, number, salt) % 11
        return self._pool.text(derive(self._seed, number, salt + 1), length)

    def _source(self, number: int, salt: int) -> tuple[str, str]:
        source = f"source-{derive(self._seed, number, salt) % SOURCES:03d}"
        return source, f"https://news.example/{source}/{number}"

    def tags(self, number: int, title: str) -> list[str]:
        count = 2 + derive(self._seed, number, 4) % 5
        base = derive(self._seed, number, 5) % TAG_POOL
        pool = [f"tag{(base + i * TAG_STRIDE) % TAG_POOL:05d}" for i in range(count - 1)]
        return [title[:8].lower(), *pool]

    def record(self, number: int) -> Record:
        category = self.category(number)
        title = self._title(number, 2)
        source, url = self._source(number, 6)
        return {
            "ID": number,
            "Title": title,
            "CategoryID": category,
            "CreateTime": CREATE_TIME_BASE + number,
            "UserID": category % USERS,
            "Tags": self.tags(number, title),
            "Source": source,
            "SourceUrl": url,
            "Status": derive(self._seed, number, 8) % 3,
        }

    def update(self, number: int, stamp: int) -> Record:
        """The five fields of benchmark 5's update; the Title carries the stamp (20-30
        characters, like a loaded title), so the row always changes."""
        salt = 16 + 4 * (stamp & 0x1F)
        source, url = self._source(number, salt + 2)
        length = 20 + derive(self._seed, number, salt) % 11
        return {
            "CreateTime": CREATE_TIME_BASE + number + 1 + stamp % 86_400,
            "Title": stamped(
                stamp, self._pool.text(derive(self._seed, number, salt + 1), 30), length
            ),
            "Source": source,
            "SourceUrl": url,
            "Status": derive(self._seed, number, salt + 3) % 3,
        }
