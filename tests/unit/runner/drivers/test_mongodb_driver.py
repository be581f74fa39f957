"""The MongoDB driver's exact commands and options, via a recording fake client.

What a server cannot show is checked here on exact calls: the write concern
and read preference objects, the options passed to pymongo, failure handling.
The same workloads run for real in test_contract_mongodb.py (FerretDB always,
a real mongod when MONGODB_BIN_DIR is set).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
from pymongo.errors import (
    BulkWriteError,
    DuplicateKeyError,
    OperationFailure,
    ServerSelectionTimeoutError,
)
from pymongo.read_preferences import Primary, SecondaryPreferred
from pymongo.write_concern import WriteConcern

from dbbench_runner.config import StepConfig, parse_config
from dbbench_runner.datasets import generator_for
from dbbench_runner.drivers.base import DatabaseUnreachableError
from dbbench_runner.drivers.mongodb import MongoDriver
from dbbench_runner.operations import Insert, Query, Read, Scan, Update


class Calls(list[tuple[Any, ...]]):
    pass


class FakeCollection:
    def __init__(self, calls: Calls, name: str, options: dict[str, Any] | None = None) -> None:
        self.calls = calls
        self.name = name
        self.options = options or {}
        self.fail_with: Exception | None = None

    def with_options(self, **options: Any) -> FakeCollection:
        return FakeCollection(self.calls, self.name, {**self.options, **options})

    def _record(self, method: str, *args: Any, **kwargs: Any) -> None:
        self.calls.append((self.name, method, args, kwargs, self.options))
        if FakeClient.fail_with is not None:
            raise FakeClient.fail_with

    def insert_one(self, document: dict[str, Any]) -> None:
        self._record("insert_one", document)

    def insert_many(self, documents: list[dict[str, Any]], **kwargs: Any) -> None:
        self._record("insert_many", documents, **kwargs)

    def find_one(self, filter: dict[str, Any], **kwargs: Any) -> dict[str, Any] | None:
        self._record("find_one", filter, **kwargs)
        return {"_id": 1}

    def find(self, filter: dict[str, Any], **kwargs: Any) -> list[dict[str, Any]]:
        self._record("find", filter, **kwargs)
        return [{"x": 1}] * 3

    def update_one(self, filter: dict[str, Any], update: dict[str, Any]) -> Any:
        self._record("update_one", filter, update)
        return type("Result", (), {"modified_count": 1, "matched_count": 1})()

    def create_index(self, keys: list[tuple[str, int]], **kwargs: Any) -> None:
        self._record("create_index", keys, **kwargs)


class FakeDatabase:
    def __init__(self, calls: Calls, name: str) -> None:
        self.calls = calls
        self.name = name

    def __getitem__(self, name: str) -> FakeCollection:
        return FakeCollection(self.calls, name)

    def command(self, name: str, *args: Any) -> dict[str, Any]:
        self.calls.append((self.name, "command", (name, *args), {}, {}))
        if name == "ping" and FakeClient.unreachable:
            raise ServerSelectionTimeoutError("no servers")
        replies: dict[str, dict[str, Any]] = {
            "ping": {"ok": 1},
            "hello": {"isWritablePrimary": True},  # a mongod: no msg "isdbgrid"
            "buildInfo": {"version": "8.0.4"},
            "getCmdLineOpts": {"parsed": {"storage": {"wiredTiger": {}}}},
            "serverStatus": {
                "storageEngine": {"name": "wiredTiger"},
                "wiredTiger": {"cache": {"maximum bytes configured": 1 << 30}},
            },
            "collStats": {"size": 100, "totalIndexSize": 40, "storageSize": 80, "count": 7},
        }
        return replies[name]


class FakeClient:
    unreachable = False
    fail_with: Exception | None = None
    instances: ClassVar[list[FakeClient]] = []

    def __init__(self, uri: str, **kwargs: Any) -> None:
        self.calls = Calls()
        self.uri = uri
        self.kwargs = kwargs
        self.closed = False
        self.admin = FakeDatabase(self.calls, "admin")
        FakeClient.instances.append(self)

    def __getitem__(self, name: str) -> FakeDatabase:
        return FakeDatabase(self.calls, name)

    def close(self) -> None:
        self.closed = True


def _reset() -> None:
    FakeClient.unreachable = False
    FakeClient.fail_with = None
    FakeClient.instances = []


@pytest.fixture(autouse=True)
def reset_fake() -> Iterator[None]:
    """Before and after each test: the fake's class state (a failure to inject, the
    clients made) must not reach the next test on the worker, which may be another
    module's (test_mongodb_field_additions imports this fixture too)."""
    _reset()
    yield
    _reset()


def step(shape: str = "flat45", **phase: Any) -> StepConfig:
    return parse_config(
        {
            "target": {
                "name": "mongo",
                "engine": "mongodb",
                "uri": "mongodb://db:27017/?replicaSet=rs0",
                "database": "bench",
                "connectRetries": 2,
            },
            "dataset": {"shape": shape, "records": 100},
            "phase": {"name": "p", "type": "insert", **phase},
        }
    )


def driver(config: StepConfig) -> tuple[MongoDriver, Calls]:
    d = MongoDriver.connect(config, generator_for(config.dataset), client_factory=FakeClient)
    return d, FakeClient.instances[-1].calls


def last(calls: Calls) -> tuple[Any, ...]:
    return calls[-1]


def test_connect_pings_with_bounded_timeouts() -> None:
    driver(step())
    client = FakeClient.instances[-1]
    assert client.uri == "mongodb://db:27017/?replicaSet=rs0"
    assert client.kwargs == {
        "appname": "dbbench-runner",
        "connectTimeoutMS": 5000,
        "serverSelectionTimeoutMS": 5000,
        "maxPoolSize": 1,  # a worker's w:0 writes and their drain share one socket
    }
    assert client.calls[0][:3] == ("admin", "command", ("ping",))


def test_unreachable_server_fails_after_the_retries() -> None:
    FakeClient.unreachable = True
    with pytest.raises(DatabaseUnreachableError, match="after 2 attempts"):
        driver(step())
    assert len(FakeClient.instances) == 2
    assert all(c.closed for c in FakeClient.instances)


@pytest.mark.parametrize(
    ("concern", "expected"),
    [
        ("unacknowledged", WriteConcern(w=0)),
        ("acknowledged", WriteConcern(w=1)),
        ("journaled", WriteConcern(w=1, j=True)),
        ("majority", WriteConcern(w="majority", j=True)),
    ],
)
def test_single_insert_with_write_concern_and_client_key(
    concern: str, expected: WriteConcern
) -> None:
    config = step(writeConcern=concern)
    d, calls = driver(config)
    record = generator_for(config.dataset).record(1)
    status = d.execute(Insert((record,)))
    assert status.ok
    assert status.rows == 1
    collection, method, args, kwargs, options = last(calls)
    assert (collection, method, kwargs) == ("flat45", "insert_one", {})
    assert options == {"write_concern": expected}
    document = args[0]
    assert document["_id"] == record["md5"]
    assert "md5" not in document
    assert len(document) == 45


def test_batch_insert_is_unordered_insert_many_and_server_ids() -> None:
    config = step(batchSize=3, idMode="server")
    d, calls = driver(config)
    generator = generator_for(config.dataset)
    records = tuple(generator.record(n) for n in (1, 2, 3))
    assert d.execute(Insert(records)).rows == 3
    _, method, args, kwargs, _ = last(calls)
    assert method == "insert_many"
    assert kwargs == {"ordered": False}
    assert [doc["md5"] for doc in args[0]] == [r["md5"] for r in records]
    assert all("_id" not in doc for doc in args[0])


def test_reads_updates_scans_use_the_right_handles_and_filters() -> None:
    config = step(
        "ycsb", type="mix", mix={"read": 1}, operations=10, readPreference="secondaryPreferred"
    )
    d, calls = driver(config)
    assert d.execute(Read("user1", secondary_ok=True)).rows == 1
    assert last(calls)[1:] == (
        "find_one",
        ({"_id": "user1"},),
        {},
        {"read_preference": SecondaryPreferred()},
    )
    d.execute(Update("user1", {"field0": "x"}))
    assert last(calls)[1:] == (
        "update_one",
        ({"_id": "user1"}, {"$set": {"field0": "x"}}),
        {},
        {"write_concern": WriteConcern(w=1)},
    )
    assert d.execute(Scan("user5", 100)).rows == 3
    assert last(calls)[1:] == (
        "find",
        ({"_id": {"$gte": "user5"}},),
        {"projection": None, "sort": [("_id", 1)], "skip": 0, "limit": 100},
        {"read_preference": SecondaryPreferred()},
    )


@pytest.mark.parametrize(
    ("name", "filter_", "options"),
    [
        (
            "indexedEquality",
            {"Number": 42},
            {"projection": None, "sort": None, "skip": 0, "limit": 10},
        ),
        (
            "twoFieldProjection",
            {"Number": 42, "Number1": {"$gte": 7}},
            {
                "projection": {"_id": 0, "Number": 1, "Number1": 1},
                "sort": None,
                "skip": 0,
                "limit": 10,
            },
        ),
        (
            "sortSkip",
            {"Number": {"$gte": 42}},
            {"projection": None, "sort": [("Date", -1)], "skip": 100, "limit": 10},
        ),
        ("scan100", {}, {"projection": None, "sort": None, "skip": 0, "limit": 100}),
    ],
)
def test_queries_exact_find_without_hints(
    name: str, filter_: dict[str, Any], options: dict[str, Any]
) -> None:
    config = step("indexed4", type="query", queries=[name], operations=4)
    d, calls = driver(config)
    d.execute(Query(name, number=42, number1=7))
    collection, method, args, kwargs, handle = last(calls)
    assert (collection, method, args) == ("indexed4", "find", (filter_,))
    assert kwargs == options
    assert "hint" not in kwargs
    assert handle == {"read_preference": Primary()}


def test_indexes_per_shape_and_id_mode() -> None:
    config = step("news", idMode="server")
    d, calls = driver(config)
    d.prepare()
    created = [
        (args[0], kwargs["name"])
        for _, method, args, kwargs, _ in calls
        if method == "create_index"
    ]
    assert created == [
        ([("ID", 1)], "ix_ID"),
        ([("CategoryID", 1)], "ix_CategoryID"),
        ([("CreateTime", 1)], "ix_CreateTime"),
        ([("UserID", 1)], "ix_UserID"),
        ([("Tags", 1)], "ix_Tags"),  # multikey on the array
    ]
    config = step("indexed4")
    d, calls = driver(config)
    d.prepare()
    keys: list[Any] = [args[0] for _, method, args, _, _ in calls if method == "create_index"]
    assert keys == [[("Number", 1)], [("Number1", 1)], [("Date", -1)]]
    d, calls = driver(step("flat45", idMode="server"))
    d.prepare()
    assert not [c for c in calls if c[1] == "create_index"]


def test_errors_are_returned_by_type_not_raised() -> None:
    d, _ = driver(step())
    FakeClient.fail_with = DuplicateKeyError("dup", code=11000)
    status = d.execute(Insert(({"md5": "a"},)))
    assert not status.ok
    assert status.error == "DuplicateKeyError(11000)"
    FakeClient.fail_with = BulkWriteError({"nInserted": 2, "writeErrors": [{}]})
    status = d.execute(Insert(({"md5": "a"}, {"md5": "b"}, {"md5": "c"})))
    assert (status.ok, status.rows, status.error) == (False, 2, "BulkWriteError(65)")


def test_server_info_and_storage() -> None:
    d, _ = driver(step())
    info = d.server_info()
    assert info.version == "8.0.4"
    assert info.cache_bytes == 1 << 30
    assert (info.shards, info.router) == ((), {})  # not a router: no shards to read
    assert info.client["driver"] == "pymongo"
    sample = d.storage()
    assert (sample.data_bytes, sample.index_bytes, sample.storage_bytes, sample.engine_records) == (
        100,
        40,
        120,
        7,
    )


def test_dates_pass_through_unchanged() -> None:
    config = step("indexed4")
    d, calls = driver(config)
    d.execute(Insert((generator_for(config.dataset).record(5),)))
    assert last(calls)[2][0]["Date"] == dt.datetime(2010, 1, 1, 0, 0, 5)


def test_storage_before_the_collection_exists() -> None:
    d, _ = driver(step())
    original = FakeDatabase.command

    def command(self: FakeDatabase, name: str, *args: Any) -> dict[str, Any]:
        if name == "collStats":
            raise OperationFailure("ns not found", code=26)
        return original(self, name, *args)

    FakeDatabase.command = command  # type: ignore[method-assign]
    try:
        assert d.storage().engine_records == 0
    finally:
        FakeDatabase.command = original  # type: ignore[method-assign]


def test_unacknowledged_writes_are_drained_on_their_own_connection() -> None:
    d, calls = driver(step(writeConcern="unacknowledged"))
    before = len(calls)
    d.drain()
    assert [c[:3] for c in calls[before:]] == [("bench", "command", ("ping",))]
    acknowledged, calls = driver(step())
    before = len(calls)
    acknowledged.drain()
    assert calls[before:] == []  # acknowledged writes need no drain
