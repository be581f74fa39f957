"""The vehicle shape (field benchmark 4) through the real runner against FerretDB:
one document per test with its items and lookup texts, the (VehicleID, TestDate)
index, the latest-test read, the 85:15:5 mix, Mileage updates."""

from __future__ import annotations

import gzip
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymongo
import pytest

from dbbench_runner.results import read_summary
from dbbench_runner.running import RunFailedError, run_step
from tests.fixtures.ferretdb import FerretDBServer
from tests.integration.runner.vehicle_contract import load_vehicles
from tests.support.inspection_files import SEED, VEHICLE_OFFSET, mapping, write_jsonl
from tests.support.runner_files import check_results, is_write_stamp_of, step

pytestmark = pytest.mark.integration

# FerretDB on SQLite filters, sorts and updates by decoding every document of the
# collection, so its CPU grows with documents times operations: 240 records and a
# 300-operation mix cost it 11.6 s of CPU, and this size makes every assertion
# below as well (about four tests per vehicle; tens of inserts and updates).
RECORDS = 80
MIX_OPERATIONS = 150


@pytest.fixture
def target(ferretdb: FerretDBServer) -> Iterator[dict[str, Any]]:
    database = f"v_{uuid.uuid4().hex[:12]}"
    yield {"name": "mongodb", "engine": "mongodb", "uri": ferretdb.uri, "database": database}
    client: Any = pymongo.MongoClient(ferretdb.uri, serverSelectionTimeoutMS=5000)
    client.drop_database(database)
    client.close()


def test_vehicle_load_read_mix_update(target: dict[str, Any], tmp_path: Path) -> None:
    load = {"type": "insert", "batchSize": 20, "reportEvery": 40}
    config = step(target, "vehicle", RECORDS, load)
    generator = load_vehicles(config, tmp_path / "load", RECORDS)
    client: Any = pymongo.MongoClient(target["uri"], serverSelectionTimeoutMS=5000)
    try:
        tests = client[target["database"]]["vehicle_test"]
        records = [generator.record(n) for n in range(1, RECORDS + 1)]
        stored = sorted(tests.find({}), key=lambda d: d["_id"])
        assert [{"TestID": d.pop("_id"), **d} for d in stored] == records
        keys = [list(spec["key"].items()) for spec in tests.list_indexes()]
        assert [("VehicleID", 1), ("TestDate", -1)] in keys

        def latest(vehicle_id: int) -> dict[str, Any]:
            # what the driver sends for a Read (schema.mongodb.read_query)
            found = tests.find_one({"VehicleID": vehicle_id}, sort=[("TestDate", -1)])
            assert found is not None
            return {"TestID": found.pop("_id"), **found}

        last = {int(str(r["VehicleID"])): r for r in records}
        several = [v for v in last if sum(r["VehicleID"] == v for r in records) > 1]
        assert several
        for vehicle_id in several[:5]:
            assert latest(vehicle_id) == last[vehicle_id]

        mix = {"type": "mix", "mix": {"read": 85, "insert": 15, "update": 5},
               "operations": MIX_OPERATIONS, "reportEvery": 50,
               "distribution": {"type": "uniform"}}  # fmt: skip
        config = step(target, "vehicle", RECORDS, mix)
        assert run_step(config, tmp_path / "mix") == 0
        summary = check_results(tmp_path / "mix", operations=MIX_OPERATIONS)
        by_type = summary["operationsByType"]
        assert summary["errors"] == 0
        assert set(by_type) == {"read", "insert", "update"}
        assert by_type["read"]["rows"] == by_type["read"]["operations"]
        inserted = by_type["insert"]["operations"]
        assert summary["records"] == inserted > 0
        assert tests.count_documents({}) == RECORDS + inserted
        assert summary["storage"]["records"] == RECORDS + inserted
        changed = [d for d in tests.find({"_id": {"$lte": RECORDS}})
                   if d["Mileage"] != generator.mileage(d["_id"])]  # fmt: skip
        assert changed
        assert all(is_write_stamp_of(d["Mileage"] - generator.mileage(d["_id"]), MIX_OPERATIONS)
                   for d in changed)  # fmt: skip
        newest = max(d["_id"] for d in tests.find({}, {"_id": 1}))
        assert newest > RECORDS
        assert latest(generator.vehicle(newest)) == generator.record(newest)
    finally:
        client.close()


def test_tests_from_files_load_as_documents_and_reads_find_their_vehicles(
    target: dict[str, Any], ferretdb: FerretDBServer, tmp_path: Path
) -> None:
    """dataset.source on the MongoDB path: the documents are the files' tests with
    their items; a read draws a loaded test and finds its vehicle's latest test (two
    finds: the files' VehicleIDs are not the shape's, so no read could guess them)."""
    records = 40
    path = write_jsonl(tmp_path / "claim" / "tests.jsonl.gz", records)
    source = {"claimName": "mot", "files": ["tests.jsonl.gz"], "format": "jsonl",
              **mapping(), "fields": {**mapping()["fields"], "Items": "items"}}  # fmt: skip
    table = {"source": source, "sourceRoot": str(tmp_path / "claim")}
    load = step(target, "vehicle", records, {"type": "insert", "batchSize": 8}, table=table)
    load = load.model_copy(update={"dataset": load.dataset.model_copy(update={"seed": SEED})})
    assert run_step(load, tmp_path / "load") == 0
    client: Any = pymongo.MongoClient(ferretdb.uri, serverSelectionTimeoutMS=5000)
    try:
        tests = client[target["database"]]["vehicle_test"]
        assert tests.count_documents({}) == records
        with gzip.open(path, "rt") as lines:
            first = json.loads(lines.readline())
        stored = tests.find_one({"_id": first["test_id"]})
        assert stored["VehicleID"] == first["vehicle_id"] > VEHICLE_OFFSET
        assert [(i["RfrID"], i["Type"]) for i in stored["Items"]] == [
            (i["RfrID"], i["Type"]) for i in first["items"]
        ]
    finally:
        client.close()
    reads = load.model_copy(update={"phase": load.phase.model_validate(
        {"name": "reads", "type": "pointReads", "operations": 20})})  # fmt: skip
    assert run_step(reads, tmp_path / "reads") == 0
    summary = read_summary(tmp_path / "reads")
    assert (summary.operations, summary.errors) == (20, 0)


def test_a_duplicate_key_in_files_is_refused_at_its_line(
    target: dict[str, Any], tmp_path: Path
) -> None:
    """An unordered insert_many writes the batch but the duplicate: the server's
    writeErrors name the refused document, and the step fails at its line."""
    path = write_jsonl(tmp_path / "claim" / "tests.jsonl", 30)
    lines = path.read_text().splitlines(keepends=True)
    repeated = json.loads(lines[21])
    repeated["test_id"] = json.loads(lines[3])["test_id"]  # line 22 repeats line 4's key
    lines[21] = json.dumps(repeated) + "\n"
    path.write_text("".join(lines))
    source = {"claimName": "mot", "files": ["tests.jsonl"], "format": "jsonl",
              **mapping(), "fields": {**mapping()["fields"], "Items": "items"}}  # fmt: skip
    table = {"source": source, "sourceRoot": str(tmp_path / "claim")}
    load = step(target, "vehicle", 30, {"type": "insert", "batchSize": 8}, table=table)
    load = load.model_copy(
        update={"dataset": load.dataset.model_copy(update={"seed": SEED}), "threads": 1}
    )
    with pytest.raises(RunFailedError) as failed:
        run_step(load, tmp_path / "load")
    assert failed.value.exit_code == 7
    assert str(failed.value).startswith(
        f"dataset.source: tests.jsonl line 22: key TestID {repeated['test_id']} is already "
        "loaded: the key column holds it twice"
    ), failed.value
