"""The driver contract against real MongoDB-protocol servers.

Always against FerretDB (the `ferretdb` fixture; built by `make tools`), and
against a real standalone `mongod` when MONGODB_BIN_DIR names a directory
holding MongoDB's binaries (the one gate, tests/fixtures/mongod.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from dbbench_runner.datasets import DatasetGenerator
from tests.fixtures.ferretdb import FerretDBServer
from tests.fixtures.mongod import StandaloneMongod, needs_mongod

from .contract import DriverContract

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
