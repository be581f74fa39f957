"""MongoDB collections, indexes and command documents for each shape and idMode.

- idMode client: the shape's key is `_id`; idMode server: no `_id` is supplied
  (an ObjectId is assigned) and the key stays an ordinary field, indexed except
  for flat45 (benchmark 1's case b).
- news Tags: an ascending index on the array field (a multikey index).
- vehicle: one document per test, Items embedded and lookup texts in it; an
  index on (VehicleID, TestDate descending), and a read finds the vehicle's
  latest test.
Pure: returns documents; the driver sends them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dbbench_runner.datasets.base import DatasetGenerator, Record
from dbbench_runner.datasets.flat45 import Flat45
from dbbench_runner.datasets.vehicle import Vehicle

ASCENDING = 1
DESCENDING = -1
# serverStatus().wiredTiger.cache: pages read from disk into the cache.
DISK_READS = "pages read into cache"


@dataclass(frozen=True)
class IndexSpec:
    keys: tuple[tuple[str, int], ...]
    name: str


def key_field(dataset: DatasetGenerator, id_mode: str) -> str:
    return "_id" if id_mode == "client" else dataset.key_column


def indexes(dataset: DatasetGenerator, id_mode: str) -> list[IndexSpec]:
    specs: list[IndexSpec] = []
    if id_mode == "server" and not isinstance(dataset, Flat45):
        specs.append(IndexSpec(((dataset.key_column, ASCENDING),), f"ix_{dataset.key_column}"))
    for column in dataset.columns:
        if column.indexed:
            direction = DESCENDING if column.descending else ASCENDING
            specs.append(IndexSpec(((column.name, direction),), f"ix_{column.name}"))
    if isinstance(dataset, Vehicle):
        specs.append(IndexSpec(LATEST_TEST, "ix_VehicleID_TestDate"))
    return specs


LATEST_TEST = (("VehicleID", ASCENDING), ("TestDate", DESCENDING))


def read_query(dataset: DatasetGenerator, key_field: str, key: object) -> tuple[Record, list[Any]]:
    """A Read's find_one filter and sort: the record by key; for vehicle, the
    vehicle's latest test (no sort otherwise: the command stays a plain find)."""
    if isinstance(dataset, Vehicle):
        return {"VehicleID": key}, [("TestDate", DESCENDING)]
    return {key_field: key}, []


def document(dataset: DatasetGenerator, record: Record, id_mode: str) -> Record:
    """The document to insert: the key moves to _id in client mode."""
    if id_mode == "server":
        return dict(record)
    doc: Record = {"_id": record[dataset.key_column]}
    doc.update((k, v) for k, v in record.items() if k != dataset.key_column)
    return doc


@dataclass(frozen=True)
class Find:
    """A find's arguments, exactly as passed to Collection.find."""

    filter: Record
    projection: Record | None = None
    sort: tuple[tuple[str, int], ...] = ()
    skip: int = 0
    limit: int = 0


def query_find(name: str, number: int, number1: int) -> Find:
    """Field benchmark 2's queries (same meaning as schema.sql.QUERIES; no hints)."""
    if name == "indexedEquality":
        return Find({"Number": number}, limit=10)
    if name == "twoFieldProjection":
        return Find(
            {"Number": number, "Number1": {"$gte": number1}},
            projection={"_id": 0, "Number": 1, "Number1": 1},
            limit=10,
        )
    if name == "sortSkip":
        return Find({"Number": {"$gte": number}}, sort=(("Date", DESCENDING),), skip=100, limit=10)
    if name == "scan100":
        return Find({}, limit=100)
    raise ValueError(f"unknown query {name}")


def scan_find(field: str, start: object, count: int) -> Find:
    return Find({field: {"$gte": start}}, sort=((field, ASCENDING),), limit=count)
