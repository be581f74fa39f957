"""The vehicle shape (field benchmark 4): fields, items, lookups, sizes, and the
read path's key (a record's VehicleID) in the workloads."""

from __future__ import annotations

import collections
import itertools
import statistics

import bson
import pytest

from dbbench_runner.config import Dataset, parse_config
from dbbench_runner.datasets import generator_for
from dbbench_runner.datasets.vehicle import (
    COLOURS,
    FUEL_TYPES,
    LOCATIONS,
    MAKES,
    MAX_ITEMS,
    RFR_TYPES,
    SECTIONS,
    TEST_CLASSES,
    TEST_DATE_BASE,
    TEST_RESULTS,
    TEST_TYPES,
    Vehicle,
)
from dbbench_runner.operations import Insert, Read, ReadModifyWrite, Update
from dbbench_runner.schema.mongodb import document
from dbbench_runner.workloads import operations_for

N = 20_000


@pytest.fixture(scope="module")
def vehicle() -> Vehicle:
    return Vehicle(seed=5)


@pytest.fixture(scope="module")
def records(vehicle: Vehicle) -> list[dict[str, object]]:
    return [vehicle.record(n) for n in range(1, N + 1)]


def test_fields_are_in_range_and_from_the_lookups(
    vehicle: Vehicle, records: list[dict[str, object]]
) -> None:
    rfr = next(lookup for lookup in vehicle.lookups if lookup.table == "rfr")
    sections = {row[0]: SECTIONS[int(str(row[1])) - 1] for row in rfr.rows}
    texts = {row[0]: row[2] for row in rfr.rows}
    for number, record in enumerate(records, start=1):
        assert record["TestID"] == number
        assert record["TestDate"] == TEST_DATE_BASE + number
        assert record["TestClass"] in TEST_CLASSES
        assert record["TestType"] in TEST_TYPES
        assert record["TestResult"] in TEST_RESULTS
        assert record["Make"] in MAKES
        assert record["Colour"] in COLOURS
        assert record["FuelType"] in FUEL_TYPES
        assert isinstance(record["Mileage"], int)
        assert 0 <= record["Mileage"] < 500_000
        assert isinstance(record["FirstUseDate"], int)
        assert record["FirstUseDate"] < record["TestDate"]  # type: ignore[operator]
        electric = record["FuelType"] == "Electric"
        assert (record["CylinderCapacity"] == 0) is electric
        assert vehicle.lookup_id("model", record["Model"]) >= 1
        items = record["Items"]
        assert isinstance(items, list)
        assert 0 <= len(items) <= MAX_ITEMS
        for item in items:
            assert set(item) == {"RfrID", "Type", "Location", "Dangerous", "Text", "Section"}
            assert item["Type"] in RFR_TYPES
            assert item["Location"] in LOCATIONS
            assert isinstance(item["Dangerous"], bool)
            assert item["Text"] == texts[item["RfrID"]]
            assert item["Section"] == sections[item["RfrID"]]
    # every item count 0..8 occurs, about equally often
    sizes = collections.Counter(len(r["Items"]) for r in records)  # type: ignore[arg-type]
    assert set(sizes) == set(range(MAX_ITEMS + 1))
    assert all(abs(c - N / 9) < 0.1 * N / 9 for c in sizes.values())
    dangerous = [i["Dangerous"] for r in records for i in r["Items"]]  # type: ignore[attr-defined]
    assert 0.03 < sum(dangerous) / len(dangerous) < 0.07


def test_vehicle_fields_belong_to_the_vehicle(records: list[dict[str, object]]) -> None:
    per_vehicle = ("Make", "Model", "Colour", "FuelType", "CylinderCapacity", "FirstUseDate",
                   "PostcodeArea")  # fmt: skip
    seen: dict[object, tuple[object, ...]] = {}
    assert records
    for record in records:
        fields = tuple(record[f] for f in per_vehicle)
        assert seen.setdefault(record["VehicleID"], fields) == fields


def test_average_document_is_about_1260_bytes(
    vehicle: Vehicle, records: list[dict[str, object]]
) -> None:
    sizes = [len(bson.encode(document(vehicle, r, "client"))) for r in records]
    assert 1_200 <= statistics.mean(sizes) <= 1_320


def test_vehicle_id_depends_only_on_seed_and_test_number(records: list[dict[str, object]]) -> None:
    # Not on dataset.records: an insert phase given `operations` sees another count.
    few = generator_for(Dataset(shape="vehicle", records=10, seed=5))
    many = generator_for(Dataset(shape="vehicle", records=10**9, seed=5))
    for number in (1, 7, 4_000, 19_999):
        assert few.record(number) == many.record(number) == records[number - 1]
        assert few.read_key(number) == records[number - 1]["VehicleID"]
    vehicles = collections.Counter(r["VehicleID"] for r in records)
    for number, record in enumerate(records, start=1):
        assert 1 <= record["VehicleID"] <= max(1, number // 4)  # type: ignore[operator]
    # about four tests per vehicle, and most vehicles have more than one
    assert 3.5 < N / len(vehicles) < 6
    assert sum(1 for c in vehicles.values() if c > 1) > 0.5 * len(vehicles)


def test_a_new_test_becomes_the_vehicles_latest(
    vehicle: Vehicle, records: list[dict[str, object]]
) -> None:
    latest: dict[object, dict[str, object]] = {}
    for record in records:  # dates increase with the number
        previous = latest.get(record["VehicleID"])
        assert previous is None or previous["TestDate"] < record["TestDate"]  # type: ignore[operator]
        latest[record["VehicleID"]] = record
    new = next(n for n in itertools.count(N + 1) if vehicle.vehicle(n) in latest)
    owner = vehicle.vehicle(new)
    assert vehicle.record(new)["TestDate"] > latest[owner]["TestDate"]  # type: ignore[operator]


def test_update_changes_the_mileage_only(vehicle: Vehicle) -> None:
    record = vehicle.record(123)
    assert vehicle.update_columns == ("Mileage",)
    update = vehicle.update(123, stamp=9)
    assert set(update) == {"Mileage"}
    assert update["Mileage"] != record["Mileage"]


def test_lookups_are_twelve_tables_with_unique_names(vehicle: Vehicle) -> None:
    assert len(vehicle.lookups) == 12
    for lookup in vehicle.lookups:
        assert [row[0] for row in lookup.rows] == list(range(1, len(lookup.rows) + 1))
        names = [row[-1] for row in lookup.rows]
        assert len(set(names)) == len(names), lookup.table
        if lookup.table != "rfr":
            assert all(vehicle.lookup_id(lookup.table, n) == i for i, n in enumerate(names, 1))
    with pytest.raises(ValueError, match="colour: no row named 'PLAID'"):
        vehicle.lookup_id("colour", "PLAID")
    assert Vehicle(seed=5).lookups == vehicle.lookups
    assert Vehicle(seed=6).lookups != vehicle.lookups


def test_mix_reads_the_vehicle_and_writes_the_test() -> None:
    step = parse_config({
        "target": {"name": "m", "engine": "mariadb", "host": "127.0.0.1", "port": 1},
        "dataset": {"shape": "vehicle", "records": 1000},
        "phase": {"name": "p", "type": "mix", "operations": 1,
                  "mix": {"read": 85, "insert": 15, "update": 5, "readModifyWrite": 5}},
    })  # fmt: skip
    generator = generator_for(step.dataset)
    ops = list(itertools.islice(operations_for(step, generator, 0), 4_000))
    tests = {generator.record(n)["TestID"]: generator.vehicle(n) for n in range(1, 1001)}
    reads = [op.key for op in ops if isinstance(op, Read)]
    assert reads
    assert set(reads) <= set(tests.values())  # VehicleIDs of loaded tests
    writes = [op.key for op in ops if isinstance(op, Update | ReadModifyWrite)]
    assert set(writes) <= set(tests)  # TestIDs
    assert all(set(op.fields) == {"Mileage"} for op in ops if isinstance(op, Update))
    inserted = [op.records[0]["TestID"] for op in ops if isinstance(op, Insert)]
    assert inserted[:2] == [1001, 1002]


def test_other_shapes_read_by_key() -> None:
    for shape in ("flat45", "indexed4", "news", "ycsb"):
        generator = generator_for(Dataset(shape=shape, records=10))
        assert generator.read_key(3) == generator.key(3)
