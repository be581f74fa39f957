"""Files in the public vehicle-inspection data set's layout, for dataset.source tests.

The UK anonymised MOT test results (field benchmark 4's data) come as one CSV
file of test results per year, with a header row: test_id, vehicle_id,
test_date, test_class_id, test_type, test_result, test_mileage,
postcode_area, make, model, colour, fuel_type, cylinder_capacity,
first_use_date (the failure items are a separate file). The files written
here have those columns in that order, their values the vehicle shape's own
records (`Vehicle(seed).record(n)`: dates as epoch seconds, names from the
shape's lookup tables) but for the vehicle ids, which are the shape's plus
VEHICLE_OFFSET (far from the 1..n/4 the shape derives from a test's number:
a read that looked a vehicle up by the shape's rule would find none), rows in
a shuffled order; the JSON Lines variant also carries each test's items
(`items`: {RfrID, Type, Location, Dangerous}).
"""

from __future__ import annotations

import csv
import gzip
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dbbench_runner.datasets.vehicle import Vehicle

# (file column, vehicle field), in the inspection data's order.
COLUMNS = (
    ("test_id", "TestID"),
    ("vehicle_id", "VehicleID"),
    ("test_date", "TestDate"),
    ("test_class_id", "TestClass"),
    ("test_type", "TestType"),
    ("test_result", "TestResult"),
    ("test_mileage", "Mileage"),
    ("postcode_area", "PostcodeArea"),
    ("make", "Make"),
    ("model", "Model"),
    ("colour", "Colour"),
    ("fuel_type", "FuelType"),
    ("cylinder_capacity", "CylinderCapacity"),
    ("first_use_date", "FirstUseDate"),
)
SEED = 11
VEHICLE_OFFSET = 7_000_000_000


def mapping(**extra: Any) -> dict[str, Any]:
    """The `source` fields that map these files onto the vehicle shape."""
    fields = {field: column for column, field in COLUMNS if field != "TestID"}
    return {"key": "test_id", "fields": fields, **extra}


def numbers(records: int, seed: int = SEED) -> list[int]:
    """1..records in the files' (shuffled) order."""
    order = list(range(1, records + 1))
    random.Random(seed).shuffle(order)
    return order


def rows(records: int, seed: int = SEED) -> Iterator[dict[str, Any]]:
    """Each test as a row of the files: column -> value, in file order."""
    vehicle = Vehicle(seed)
    for number in numbers(records, seed):
        record = vehicle.record(number)
        record["VehicleID"] = int(str(record["VehicleID"])) + VEHICLE_OFFSET
        yield {column: record[field] for column, field in COLUMNS}


def items(number: int, seed: int = SEED) -> list[dict[str, Any]]:
    """Test `number`'s items as the files hold them (no Text, no Section)."""
    return [
        {key: item[key] for key in ("RfrID", "Type", "Location", "Dangerous")}
        for item in Vehicle(seed).items(number)
    ]


def write_csv(path: Path, records: int, *, delimiter: str = ",", seed: int = SEED) -> Path:
    """A CSV file (gzip when the name ends in .gz): header, then `records` rows."""
    path.parent.mkdir(parents=True, exist_ok=True)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt", newline="", encoding="utf-8") as out:
        writer = csv.writer(out, delimiter=delimiter)
        writer.writerow([column for column, _ in COLUMNS])
        for row in rows(records, seed):
            writer.writerow(row.values())
    return path


def write_jsonl(path: Path, records: int, *, seed: int = SEED) -> Path:
    """JSON Lines (gzip when the name ends in .gz), each test with its `items`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt", encoding="utf-8") as out:
        for row in rows(records, seed):
            row["items"] = items(row["test_id"], seed)
            out.write(json.dumps(row) + "\n")
    return path


def csv_lines(path: Path) -> list[str]:
    return path.read_text().splitlines(keepends=True)
