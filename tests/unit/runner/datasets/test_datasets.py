from __future__ import annotations

import collections
import datetime as dt
import math

import pytest

from dbbench_runner.config import Dataset
from dbbench_runner.datasets import generator_for, record_size
from dbbench_runner.datasets.base import STAMP_LIMIT
from dbbench_runner.datasets.indexed4 import NUMBER1_RANGE, NUMBER_RANGE
from dbbench_runner.datasets.news import CREATE_TIME_BASE, TAG_POOL, USERS, News
from dbbench_runner.keyspace import step_position, write_stamp

SHAPES = ["flat45", "indexed4", "news", "vehicle", "ycsb"]


def chi_square_uniform(counts: list[int]) -> float:
    expected = sum(counts) / len(counts)
    return sum((c - expected) ** 2 / expected for c in counts)


# 99.9% quantile of chi-square with 9 degrees of freedom: a fair generator
# fails this with probability 0.001 (and the seeds are fixed).
CHI2_9_999 = 27.88


@pytest.mark.parametrize("shape", SHAPES)
def test_records_depend_only_on_seed_and_number(shape: str) -> None:
    first = generator_for(Dataset(shape=shape, records=1000, seed=11))
    second = generator_for(Dataset(shape=shape, records=1000, seed=11))
    forward = [first.record(n) for n in range(1, 200)]
    backward = [second.record(n) for n in reversed(range(1, 200))][::-1]
    assert forward == backward
    other_seed = generator_for(Dataset(shape=shape, records=1000, seed=12))
    if shape != "flat45":  # flat45's only varying field is md5(number), by definition
        assert other_seed.record(5) != first.record(5)


@pytest.mark.parametrize("shape", SHAPES)
def test_keys_are_unique_and_in_the_record(shape: str) -> None:
    generator = generator_for(Dataset(shape=shape, records=10_000))
    keys = [generator.key(n) for n in range(1, 10_001)]
    assert len(set(keys)) == len(keys)
    assert generator.record(77)[generator.key_column] == generator.key(77)


@pytest.mark.parametrize("size", [512, 1024, 4096])
def test_flat45_has_45_fields_md5_key_and_exact_size(size: int) -> None:
    generator = generator_for(Dataset(shape="flat45", records=10, record_size=size))
    record = generator.record(3)
    assert len(record) == 45
    assert record["md5"] == "eccbc87e4b5ce2fe28308fd9f2a7baf3"  # md5("3")
    assert record_size(record) == size
    # all non-key fields are constant across records
    other = generator.record(4)
    assert {k: v for k, v in record.items() if k != "md5"} == {
        k: v for k, v in other.items() if k != "md5"
    }


def test_indexed4_fields_and_distributions() -> None:
    generator = generator_for(Dataset(shape="indexed4", records=20_000, seed=2))
    records = [generator.record(n) for n in range(1, 20_001)]
    assert all(950 <= len(str(r["Data"])) <= 1024 for r in records)
    numbers = [int(str(r["Number"])) for r in records]
    assert min(numbers) >= 0
    assert max(numbers) < NUMBER_RANGE
    bins = [0] * 10
    for value in numbers:
        bins[value * 10 // NUMBER_RANGE] += 1
    assert chi_square_uniform(bins) < CHI2_9_999
    assert all(0 <= int(str(r["Number1"])) < NUMBER1_RANGE for r in records)
    assert records[1]["Date"] - records[0]["Date"] == dt.timedelta(seconds=1)  # type: ignore[operator]


def test_ycsb_has_ten_fields_of_a_tenth() -> None:
    generator = generator_for(Dataset(shape="ycsb", records=10, record_size=1000))
    record = generator.record(1)
    assert [k for k in record if k != "YCSB_KEY"] == [f"field{i}" for i in range(10)]
    assert all(len(str(record[f"field{i}"])) == 100 for i in range(10))
    assert str(record["YCSB_KEY"]).startswith("user")


def test_news_fields_follow_the_benchmark() -> None:
    news = News(seed=5)
    records = [news.record(n) for n in range(1, 30_001)]
    for number, record in enumerate(records, start=1):
        title = str(record["Title"])
        tags = record["Tags"]
        assert isinstance(tags, list)
        assert 20 <= len(title) <= 30
        assert 2 <= len(tags) <= 6
        assert len(set(tags)) == len(tags)
        assert tags[0] == title[:8].lower()
        assert record["CreateTime"] == CREATE_TIME_BASE + number
        assert record["UserID"] == int(str(record["CategoryID"])) % USERS
        assert record["Status"] in (0, 1, 2)
    counts = collections.Counter(int(str(r["CategoryID"])) for r in records)
    last = max(counts)
    complete = [c for category, c in counts.items() if category != last]
    assert min(complete) >= 10
    assert max(complete) <= 100
    # categories are consecutive runs: each category's records are contiguous
    assert sorted(counts) == list(range(1, last + 1))
    # tag counts 2..6 roughly uniform; pool tags span the pool
    sizes = collections.Counter(len(r["Tags"]) for r in records)  # type: ignore[arg-type]
    assert set(sizes) == {2, 3, 4, 5, 6}
    assert all(abs(n - len(records) / 5) < 0.05 * len(records) for n in sizes.values())
    pool = {t for r in records for t in r["Tags"][1:]}  # type: ignore[index]
    assert len(pool) > 0.95 * TAG_POOL


def test_news_categories_cover_about_1_1_million_records() -> None:
    news = News(seed=5)
    # 20,000 categories of 10..100 records: about 1.1M records before repeating.
    capacity = news._ends[-1]
    assert math.isclose(capacity, 1_100_000, rel_tol=0.02)
    assert news.category(capacity) == 20_000
    assert news.category(capacity + 1) == 1


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("record_size", [128, 1024])
def test_updates_change_only_the_update_columns(shape: str, record_size: int) -> None:
    generator = generator_for(Dataset(shape=shape, records=10, record_size=record_size))
    update = generator.update(4, stamp=3)
    assert tuple(update) == generator.update_columns
    assert generator.update(4, stamp=3) == update
    loaded = generator.record(4)
    widths = {c.name: c.size for c in generator.columns if c.kind == "str"}
    for name, value in update.items():
        assert type(value) is type(loaded[name]), name
        if name in widths:
            assert len(str(value)) <= widths[name], name  # fits the column


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("record_size", [128, 512, 1024])
def test_every_write_stamp_stores_a_value_no_other_write_stored(
    shape: str, record_size: int
) -> None:
    """Whatever an earlier write (or the load) left in the row, an update changes it."""
    generator = generator_for(Dataset(shape=shape, records=10, record_size=record_size))
    position = step_position(phase_index=2, repeat=3)
    stamps = {
        write_stamp(step_position(p, r), 8, w, s)
        for p in (0, 2)
        for r in (1, 2, 3)
        for w in range(8)
        for s in range(40)
    }
    stamps |= {position + 1, write_stamp(position, 1, 0, 2**41), STAMP_LIMIT - 1}  # fmt: skip
    for number in (1, 7):
        loaded = {k: generator.record(number)[k] for k in generator.update_columns}
        values = [tuple(sorted(generator.update(number, stamp).items())) for stamp in stamps]
        assert len(set(values)) == len(values)
        assert tuple(sorted(loaded.items())) not in set(values)
