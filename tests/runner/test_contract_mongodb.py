"""The driver contract against a real MongoDB at MONGODB_URI (skipped when unset).

No MongoDB can run on the development machine; point MONGODB_URI at any real
server (e.g. `docker run -p 27017:27017 mongo:8.0`, uri mongodb://127.0.0.1:27017)
to run it.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from dbbench_runner.datasets import DatasetGenerator

from .contract import DriverContract

URI = os.environ.get("MONGODB_URI")

pytestmark = [
    pytest.mark.mongodb,
    pytest.mark.skipif(
        URI is None,
        reason="MONGODB_URI is not set: no MongoDB server to run the contract suite against",
    ),
]


class TestMongoDBContract(DriverContract):
    @pytest.fixture
    def target(self) -> Iterator[dict[str, Any]]:
        import pymongo  # noqa: PLC0415

        database = f"c_{uuid.uuid4().hex[:12]}"
        self.client: Any = pymongo.MongoClient(URI, serverSelectionTimeoutMS=5000)
        yield {"name": "mongodb", "engine": "mongodb", "uri": URI, "database": database}
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
