"""MongoDB through pymongo.

Write concern and read preference are set once on collection handles
(`with_options`); finds never carry index hints. The client factory is a
parameter so unit tests can inject a recording fake at exactly this boundary.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pymongo
from pymongo.errors import BulkWriteError, OperationFailure, PyMongoError
from pymongo.read_preferences import Nearest, Primary, SecondaryPreferred
from pymongo.write_concern import WriteConcern

from dbbench_runner.config import StepConfig, password
from dbbench_runner.datasets import DatasetGenerator
from dbbench_runner.datasets.vehicle import Vehicle
from dbbench_runner.drivers import mongodb_distribution as distribution
from dbbench_runner.drivers import mongodb_shards as shards
from dbbench_runner.drivers.base import CounterSample, ServerInfo, StorageSample, with_retries
from dbbench_runner.operations import (
    Insert,
    Operation,
    Query,
    Read,
    ReadModifyWrite,
    Scan,
    Status,
    Update,
)
from dbbench_runner.schema import mongodb as schema

log = logging.getLogger(__name__)
ClientFactory = Callable[..., Any]

WRITE_CONCERNS: dict[str, dict[str, object]] = {
    "unacknowledged": {"w": 0},
    "acknowledged": {"w": 1},
    "journaled": {"w": 1, "j": True},
    "majority": {"w": "majority", "j": True},
}
READ_PREFERENCES: dict[str, Callable[[], Any]] = {
    "primary": Primary,
    "secondaryPreferred": SecondaryPreferred,
    "nearest": Nearest,
}


class MongoDriver:
    def __init__(
        self,
        config: StepConfig,
        dataset: DatasetGenerator,
        client: Any,
        connect_shard: shards.ConnectShard | None = None,
    ) -> None:
        phase = config.phase
        self._config = config
        self._dataset = dataset
        self._client = client
        # How to reach a shard's own servers, when the target is a sharded cluster.
        self._connect_shard = connect_shard
        self._db = client[config.target.database]
        collection = self._db[dataset.table]
        self._writes = collection.with_options(
            write_concern=WriteConcern(**WRITE_CONCERNS[config.write_concern])  # type: ignore[arg-type]
        )
        self._reads = collection.with_options(
            read_preference=READ_PREFERENCES[phase.read_preference]()
        )
        self._key = schema.key_field(dataset, phase.id_mode)
        self._acknowledged = config.write_concern != "unacknowledged"
        self._router: bool | None = None  # a sharded cluster's router (_through_router)

    @classmethod
    def connect(
        cls,
        config: StepConfig,
        dataset: DatasetGenerator,
        client_factory: ClientFactory = pymongo.MongoClient,
    ) -> MongoDriver:
        target = config.target
        timeout_ms = int(target.connect_timeout * 1000)

        # Credentials given apart from the URI (a deployed target: the URI is
        # in a ConfigMap, the password in a mounted Secret) go as options.
        credentials: dict[str, str] = {}
        if target.user is not None:
            credentials = {"username": target.user, "password": password(target) or ""}

        def client_for(uri: str | None) -> Any:
            return client_factory(
                uri,
                appname="dbbench-runner",
                connectTimeoutMS=timeout_ms,
                serverSelectionTimeoutMS=timeout_ms,
                # One connection per worker: its unacknowledged writes and the
                # command that drains them travel the same socket, in order.
                maxPoolSize=1,
                **credentials,
            )

        def attempt() -> Any:
            client = client_for(target.uri)
            try:
                client.admin.command("ping")
            except PyMongoError:
                client.close()
                raise
            return client

        log.info("pymongo %s", pymongo.version)
        client = with_retries(
            attempt, what="mongodb", attempts=target.connect_retries, retry_on=(PyMongoError,)
        )
        return cls(config, dataset, client, connect_shard=client_for)

    def drain(self) -> None:
        # The server handles one connection's messages in order: a command that
        # answers comes back after every w:0 write sent before it was applied.
        if not self._acknowledged:
            self._db.command("ping")

    def prepare(self) -> None:
        collection = self._db[self._dataset.table]
        for spec in schema.indexes(self._dataset, self._config.phase.id_mode):
            collection.create_index(list(spec.keys), name=spec.name)

    def execute(self, operation: Operation) -> Status:
        try:
            return self._execute(operation)
        except BulkWriteError as exc:
            inserted = int(exc.details.get("nInserted", 0))
            # The first record the server refused (an unordered insert_many writes the rest).
            refused = (exc.details.get("writeErrors") or [{}])[0].get("index")
            return Status(ok=False, rows=inserted, error=shards.error_name(exc), index=refused)
        except PyMongoError as exc:
            return Status.failed(shards.error_name(exc))

    def _find(self, find: schema.Find) -> Status:
        cursor = self._reads.find(
            find.filter,
            projection=find.projection,
            sort=list(find.sort) or None,
            skip=find.skip,
            limit=find.limit,
        )
        return Status(ok=True, rows=len(list(cursor)))

    def _update(self, key: str | int, fields: dict[str, object]) -> Status:
        result = self._writes.update_one({self._key: key}, {"$set": fields})
        # Matched, not modified: the documents the update found (every update writes
        # a stamp no other write has, so the two agree). w:0: the server says
        # nothing, not even whether the document was there.
        if self._acknowledged:
            return Status(ok=True, rows=result.matched_count)
        return Status(ok=True, counted=False)

    def _read(self, key: str | int) -> Status:
        dataset = self._dataset
        if isinstance(dataset, Vehicle) and dataset.reads_by_test:
            # Records from files: the key names a loaded test; its vehicle is looked
            # up first (a second find: MongoDB has no subquery short of $lookup).
            test = self._reads.find_one({self._key: key}, projection={"VehicleID": 1})
            if test is None:
                return Status(ok=True, rows=0)
            key = test["VehicleID"]
        query, sort = schema.read_query(dataset, self._key, key)
        options = {"sort": sort} if sort else {}
        found = self._reads.find_one(query, **options)
        return Status(ok=True, rows=0 if found is None else 1)

    def _execute(self, operation: Operation) -> Status:
        id_mode = self._config.phase.id_mode
        match operation:
            case Insert(records=records):
                docs = [schema.document(self._dataset, r, id_mode) for r in records]
                if len(docs) == 1:
                    self._writes.insert_one(docs[0])
                else:
                    self._writes.insert_many(docs, ordered=False)
                return Status(ok=True, rows=len(docs))
            case Read(key=key):
                return self._read(key)
            case Update(key=key, fields=fields):
                return self._update(key, fields)
            case Scan(start_key=start, count=count):
                return self._find(schema.scan_find(self._key, start, count))
            case ReadModifyWrite(key=key, fields=fields):
                # Read from the primary (the write follows), then write what was read.
                found = self._writes.find_one({self._key: key})
                result = self._writes.update_one({self._key: key}, {"$set": fields})
                # w:0: the read (always answered) says whether the document was there.
                rows = result.matched_count if self._acknowledged else int(found is not None)
                return Status(ok=True, rows=rows)
            case Query(kind=name, number=number, number1=number1):
                return self._find(schema.query_find(name, number, number1))
        raise TypeError(f"unknown operation {operation!r}")

    def server_info(self) -> ServerInfo:
        """The servers that hold the data: the one the runner talks to, or, through a
        router (mongos), each shard's own mongod (`mongodb_shards`)."""
        found = shards.version(self._db.command("buildInfo"))
        client = {"driver": "pymongo", "version": pymongo.version}
        if self._connect_shard is not None and self._through_router():
            router, _ = shards.server_settings(self._client)
            router_uri = self._config.target.uri or "mongodb://"
            listed = shards.read_shards(self._client, router_uri, self._connect_shard)
            return ServerInfo(
                engine="mongodb",
                version=found,
                settings=shards.common_settings(listed),
                cache_bytes=shards.total_cache(listed),
                client=client,
                shards=listed,
                router=router,
            )
        settings, cache = shards.server_settings(self._client)
        return ServerInfo(
            engine="mongodb", version=found, settings=settings, cache_bytes=cache, client=client,
            uptime_seconds=self._uptime(),
        )  # fmt: skip

    def _uptime(self) -> float | None:
        """serverStatus' uptime of the server the runner talks to (milliseconds where
        given); None where it is refused or not reported."""
        try:
            status = self._client.admin.command("serverStatus")
        except OperationFailure:
            return None
        if status.get("uptimeMillis") is not None:
            return float(status["uptimeMillis"]) / 1000
        return float(status["uptime"]) if status.get("uptime") is not None else None

    def storage(self) -> StorageSample:
        # The phase's collection only: a run may hold the client-keyed and the
        # server-keyed collection side by side (idMode), each measured on its own.
        try:
            stats = self._db.command("collStats", self._dataset.table)
        except OperationFailure:
            # Older servers answer NamespaceNotFound before the first insert.
            stats = {}
        index = int(stats.get("totalIndexSize", 0))
        return StorageSample(
            data_bytes=int(stats.get("size", 0)),
            index_bytes=index,
            storage_bytes=int(stats.get("storageSize", 0)) + index,
            engine_records=int(stats.get("count", 0)),
            # Through a router: the collection on each shard (mongodb_distribution).
            shards=distribution.read_distribution(
                self._client, self._config.target.database, self._dataset.table
            )
            if self._through_router()
            else (),
        )

    def _through_router(self) -> bool:
        """Whether the client talks to a mongos (asked once: hello's `msg`)."""
        if self._router is None:
            self._router = shards.is_router(self._client)
        return self._router

    def disk_reads(self) -> CounterSample | None:
        """WiredTiger's pages read into cache; None on servers without it
        (mongos, FerretDB) or that refuse serverStatus."""
        try:
            status = self._client.admin.command("serverStatus")
        except OperationFailure:
            return None
        value = status.get("wiredTiger", {}).get("cache", {}).get(schema.DISK_READS)
        return CounterSample(schema.DISK_READS, int(value)) if value is not None else None

    def close(self) -> None:
        self._client.close()
