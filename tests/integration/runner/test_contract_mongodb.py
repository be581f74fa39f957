"""The driver contract against real MongoDB-protocol servers.

Always against FerretDB (the `ferretdb` fixture; built by `make tools`), and
against a real standalone `mongod` when MONGODB_BIN_DIR names a directory
holding MongoDB's binaries (the one gate, tests/fixtures/mongod.py).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bson import ObjectId

from dbbench_runner.datasets import DatasetGenerator
from dbbench_runner.merge import merge
from dbbench_runner.running import run_step
from tests.fixtures.ferretdb import FerretDBServer
from tests.fixtures.mongod import StandaloneMongod, needs_mongod
from tests.integration.runner.driver_contract import RECORDS, DriverContract

pytestmark = pytest.mark.integration


class MongoDBContract(DriverContract):
    """Abstract: subclasses define the fixture `uri` of a running server."""

    @pytest.fixture
    def target(self, uri: str) -> Iterator[dict[str, Any]]:
        import pymongo  # noqa: PLC0415

        database = f"c_{uuid.uuid4().hex[:12]}"
        self.client: Any = pymongo.MongoClient(uri, serverSelectionTimeoutMS=5000)
        yield {"name": "mongodb", "engine": "mongodb", "uri": uri, "database": database}
        self.client.drop_database(database)
        self.client.close()

    @pytest.fixture(
        params=[
            {"batchSize": 1, "writeConcern": "acknowledged"},
            {"batchSize": 25, "writeConcern": "acknowledged"},
            {"batchSize": 1, "writeConcern": "journaled"},
            {"batchSize": 1, "writeConcern": "majority"},
            {"batchSize": 1, "writeConcern": "unacknowledged"},
        ],
        ids=["single", "batch25", "journaled", "majority", "unacknowledged"],
    )
    def insert_variant(self, request: pytest.FixtureRequest) -> dict[str, Any]:
        return dict(request.param)

    def drop_database(self, target: dict[str, Any]) -> None:
        import pymongo  # noqa: PLC0415

        # A client of its own: the test's (self.client) is closed with its target.
        client: Any = pymongo.MongoClient(target["uri"], serverSelectionTimeoutMS=5000)
        try:
            client.drop_database(target["database"])
        finally:
            client.close()

    def key_indexed(self, target: dict[str, Any], dataset: DatasetGenerator) -> bool:
        indexes = self.client[target["database"]][dataset.table].index_information()
        return any(dataset.key_column == key for i in indexes.values() for key, _ in i["key"])

    def keyed_by(self, target: dict[str, Any], dataset: DatasetGenerator) -> str:
        first = self.client[target["database"]][dataset.table].find_one({})
        assert first is not None
        if first["_id"] == dataset.key(1) or isinstance(first["_id"], str):
            return "record key"
        return "server" if isinstance(first["_id"], ObjectId) else repr(first["_id"])

    def test_unacknowledged_writes_the_server_did_not_apply_are_errors(
        self, target: dict[str, Any], tmp_path: Path
    ) -> None:
        # w:0 reports nothing back. A hand-written step file that loads the same
        # client keys again (the operator would number past them) sends writes
        # the server drops as duplicate _id without a word to the client.
        phase = {"type": "insert", "writeConcern": "unacknowledged", "batchSize": 10}
        first = self.step(target, "flat45", RECORDS, phase)
        assert run_step(first, tmp_path / "first") == 0
        table = {"recordsBefore": RECORDS, "firstRecord": 1}
        again = self.step(target, "flat45", RECORDS, phase, table=table)
        assert run_step(again, tmp_path / "again") == 3  # error rate above maxErrorRate
        summary = json.loads((tmp_path / "again" / "summary.json").read_text())
        assert summary["storedRecords"] == RECORDS
        assert summary["unappliedWrites"] == RECORDS
        assert summary["errorsByType"] == {"insert:NotApplied": RECORDS}
        assert summary["status"] == "failed"

    def test_two_pods_unacknowledged_writes_are_checked_on_the_merged_count(
        self, target: dict[str, Any], tmp_path: Path
    ) -> None:
        """A pod compares what it sent with the whole collection's count, which
        holds the other pod's writes too; only the merge compares what every pod
        sent with what the collection holds.

        The drop is real: a hand-written step file (the operator numbers past
        earlier records) has the two pods write records 121..360 over a
        collection holding 1..240. Pod 0's share, 121..240, repeats _ids the
        collection holds; the server refuses each of those inserts as a duplicate
        key, and a w:0 client is told nothing: 120 writes sent, none stored.
        """
        half = RECORDS // 2
        load = {"type": "insert", "batchSize": 20}
        assert run_step(self.step(target, "flat45", RECORDS, load), tmp_path / "load") == 0
        w0 = {"type": "insert", "writeConcern": "unacknowledged", "batchSize": 10}
        table = {"recordsBefore": RECORDS, "firstRecord": half + 1}
        # Pod 1 first: pod 0's count then includes pod 1's 120 new documents, which
        # hide its own 120 refused ones (as pods running side by side can).
        for pod in (1, 0):
            config = self.step(target, "flat45", RECORDS, w0, table=table,
                               pod={"index": pod, "count": 2})  # fmt: skip
            assert run_step(config, tmp_path / f"pod{pod}") == 0  # its own check passes
            alone = json.loads((tmp_path / f"pod{pod}" / "summary.json").read_text())
            assert (alone["status"], alone["unappliedWrites"]) == ("succeeded", 0)
        collection = self.client[target["database"]][config.dataset.shape]
        assert collection.count_documents({}) == RECORDS + half  # 360 sent over 240 held
        merged = merge(tmp_path / "merged", [tmp_path / "pod0", tmp_path / "pod1"])
        assert merged.status == "failed"
        assert (merged.stored_records, merged.unapplied_writes) == (RECORDS + half, half)
        assert merged.errors_by_type == {"insert:NotApplied": half}
        assert merged.errors == half
        assert f"{half:,} unacknowledged (w:0) writes were not applied" in (merged.reason or "")

    def stored(
        self, target: dict[str, Any], dataset: DatasetGenerator, id_mode: str
    ) -> list[dict[str, Any]]:
        key = dataset.key_column
        found = []
        for document in self.client[target["database"]][dataset.table].find({}):
            identifier = document.pop("_id")
            if id_mode == "client":
                document[key] = identifier
            found.append({c.name: document[c.name] for c in dataset.columns})
        return sorted(found, key=lambda r: str(r[key]))


class TestFerretDBContract(MongoDBContract):
    # Every FerretDB query is a table scan: pace reads at a rate it keeps up with
    # on a loaded 2-core machine (it proves the pacing, not the server's speed).
    paced_rate = 10
    disk_reads_counter = None  # serverStatus has no wiredTiger section

    @pytest.fixture
    def uri(self, ferretdb: FerretDBServer) -> str:
        return ferretdb.uri


@needs_mongod
class TestMongodContract(MongoDBContract):
    disk_reads_counter = "pages read into cache"

    @pytest.fixture
    def uri(self, mongod: StandaloneMongod) -> str:
        return mongod.uri
