"""vehicle (field benchmark 4): vehicle-inspection tests (UK MOT-like), one record per test.

- TestID: the record number (key);
- VehicleID: drawn from vehicles 1..max(1, n // 4) for test n, so there are
  about four tests per vehicle and the vehicle depends on nothing but (seed,
  n): not on dataset.records, which differs between an insert phase given
  `operations` and the phases after it. Older vehicles (low ids) collect more
  tests, as old cars do. Every vehicle-level field (make, model, colour, fuel,
  engine size, first use, postcode area) is a function of the VehicleID;
- TestDate: 2017-01-01 UTC plus one second per record (epoch seconds), so a
  vehicle's later tests are newer and new inserts become its latest test;
- Mileage: days since first use times the vehicle's daily miles (the update
  target); TestClass, TestType, TestResult: weighted picks;
- Items: 0..8 failure/advisory items (RfrID, Type, Location, Dangerous, and
  the reason's Text and Section looked up from the RfrID).
Text fields carry the lookup tables' names; the relational side stores ids and
rebuilds the texts with a 14-table join (schema.vehicle). The lookup tables
are fixed by the seed (`lookups`). recordSize does not apply.
"""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass

from dbbench_runner.datasets.base import Column, FillerPool, Record, derive

TESTS_PER_VEHICLE = 4
TEST_DATE_BASE = 1_483_228_800  # 2017-01-01 00:00:00 UTC
FIRST_USE_BASE = 1_451_606_400  # 2016-01-01: every vehicle is in use before its tests
FIRST_USE_SPAN = 20 * 365 * 86_400
MAX_ITEMS = 8
RFRS = 2_000
MODELS = 600

TEST_CLASSES = ("1", "2", "3", "4", "5", "7")
TEST_CLASS_WEIGHTS = (2, 2, 1, 88, 2, 5)
TEST_TYPES = ("Normal Test", "Retest", "Partial retest left", "Partial retest repaired",
              "Full retest", "Retest after appeal")  # fmt: skip
TEST_TYPE_WEIGHTS = (80, 8, 4, 4, 3, 1)
TEST_RESULTS = ("Pass", "Fail", "Pass with rectification at station", "Abandoned", "Aborted")
TEST_RESULT_WEIGHTS = (65, 25, 7, 2, 1)
MAKES = ("FORD", "VAUXHALL", "VOLKSWAGEN", "PEUGEOT", "RENAULT", "TOYOTA", "NISSAN", "BMW",
         "CITROEN", "AUDI", "HONDA", "FIAT", "MERCEDES-BENZ", "KIA", "HYUNDAI", "SKODA",
         "SEAT", "MAZDA", "MINI", "SUZUKI", "VOLVO", "LAND ROVER", "MITSUBISHI", "JAGUAR",
         "DACIA", "ALFA ROMEO", "SUBARU", "LEXUS", "PORSCHE", "TESLA")  # fmt: skip
COLOURS = ("BLACK", "BLUE", "BRONZE", "BROWN", "CREAM", "GOLD", "GREEN", "GREY", "MAROON",
           "ORANGE", "PINK", "PURPLE", "RED", "SILVER", "TURQUOISE", "WHITE", "YELLOW")  # fmt: skip
FUEL_TYPES = ("Petrol", "Diesel", "Electric", "Hybrid Electric (Clean)", "LPG", "Other")
FUEL_TYPE_WEIGHTS = (55, 38, 2, 3, 1, 1)
POSTCODE_AREAS = 120
SECTIONS = ("Identification of the vehicle", "Brakes", "Steering", "Visibility",
            "Lamps, reflectors and electrical equipment",
            "Axles, wheels, tyres and suspension", "Body, chassis, structure",
            "Other equipment", "Nuisance", "Supplementary tests for buses and coaches",
            "Seat belts and supplementary restraint systems")  # fmt: skip
RFR_TYPES = ("ADVISORY", "FAIL", "MAJOR", "MINOR", "PRS", "USER ENTERED")
LOCATIONS = tuple(
    " ".join(part for part in parts if part) or "not specified"
    for parts in itertools.product(("", "nearside", "offside", "central"),
                                   ("", "front", "rear"), ("", "upper", "lower"))
)  # fmt: skip
# A reason's text: 70..170 characters (the average test document is about 1,260 bytes).
RFR_TEXT_MIN, RFR_TEXT_SPREAD = 70, 101


@dataclass(frozen=True)
class Lookup:
    """One lookup table: its rows are (id, *values), ids 1..len(rows)."""

    table: str
    rows: tuple[tuple[object, ...], ...]


def _named(names: tuple[str, ...]) -> tuple[tuple[object, ...], ...]:
    return tuple((i, name) for i, name in enumerate(names, start=1))


def _weighted(weights: tuple[int, ...]) -> tuple[list[int], int]:
    cumulative = list(itertools.accumulate(weights))
    return cumulative, cumulative[-1]


class Vehicle:
    table = "vehicle_test"
    key_column = "TestID"
    update_columns = ("Mileage",)
    key_order = None  # the key (TestID) is the record number

    def __init__(self, seed: int, record_size: int = 0, *, reads_by_test: bool = False) -> None:
        del record_size  # fixed by the shape
        self._seed = seed
        # Records from files (dataset.source): the runner cannot derive a test's
        # VehicleID from its number, so a read names a loaded test (its TestID) and
        # the database looks up that test's vehicle (schema.vehicle, schema.mongodb).
        self.reads_by_test = reads_by_test
        pool = FillerPool(seed)
        self.columns = (
            Column("TestID", "key_int"),
            Column("VehicleID", "int"),
            Column("TestDate", "int"),
            Column("TestClass", "str", 2),
            Column("TestType", "str", 32),
            Column("TestResult", "str", 40),
            Column("Mileage", "int"),
            Column("PostcodeArea", "str", 2),
            Column("Make", "str", 32),
            Column("Model", "str", 32),
            Column("Colour", "str", 16),
            Column("FuelType", "str", 32),
            Column("CylinderCapacity", "int"),
            Column("FirstUseDate", "int"),
            Column("Items", "items"),
        )
        areas = tuple(chr(65 + i // 26) + chr(65 + i % 26) for i in range(POSTCODE_AREAS))
        # A model belongs to one make; its name is unique (the relational side maps names to ids).
        models = tuple(
            (m, 1 + derive(seed, m, 200) % len(MAKES),
             f"{pool.text(derive(seed, m, 201), 4 + derive(seed, m, 202) % 8).upper()} {m}")
            for m in range(1, MODELS + 1)
        )  # fmt: skip
        rfrs = tuple(
            (r, 1 + derive(seed, r, 203) % len(SECTIONS),
             pool.text(derive(seed, r, 204), RFR_TEXT_MIN + derive(seed, r, 205) % RFR_TEXT_SPREAD))
            for r in range(1, RFRS + 1)
        )  # fmt: skip
        self.lookups: tuple[Lookup, ...] = (
            Lookup("test_class", _named(TEST_CLASSES)),
            Lookup("test_type", _named(TEST_TYPES)),
            Lookup("test_result", _named(TEST_RESULTS)),
            Lookup("make", _named(MAKES)),
            Lookup("model", models),
            Lookup("colour", _named(COLOURS)),
            Lookup("fuel_type", _named(FUEL_TYPES)),
            Lookup("postcode_area", _named(areas)),
            Lookup("rfr_section", _named(SECTIONS)),
            Lookup("rfr", rfrs),
            Lookup("rfr_type", _named(RFR_TYPES)),
            Lookup("item_location", _named(LOCATIONS)),
        )
        # name -> id per lookup table (a model's name is its last value), for the relational side
        self._ids = {
            lookup.table: {row[-1]: int(str(row[0])) for row in lookup.rows}
            for lookup in self.lookups
        }
        self._areas = areas
        self._models = models
        self._rfrs = rfrs
        self._classes = _weighted(TEST_CLASS_WEIGHTS)
        self._types = _weighted(TEST_TYPE_WEIGHTS)
        self._results = _weighted(TEST_RESULT_WEIGHTS)
        self._fuels = _weighted(FUEL_TYPE_WEIGHTS)

    def key(self, number: int) -> int:
        return number

    def lookup_id(self, table: str, name: object) -> int:
        """The id of `name` in lookup table `table` (ValueError when unknown)."""
        try:
            return self._ids[table][name]
        except KeyError:
            raise ValueError(f"{table}: no row named {name!r}") from None

    def vehicle(self, number: int) -> int:
        """The VehicleID of test `number`: a pure function of (seed, number)."""
        return 1 + derive(self._seed, number, 1) % max(1, number // TESTS_PER_VEHICLE)

    def read_key(self, number: int) -> int:
        """Reads fetch the latest test of the vehicle test `number` belongs to: its
        VehicleID, or (reads_by_test) the test's own key, the vehicle looked up."""
        return number if self.reads_by_test else self.vehicle(number)

    def _pick(self, weighted: tuple[list[int], int], value: int) -> int:
        cumulative, total = weighted
        return bisect.bisect_right(cumulative, value % total)

    def _first_use(self, vehicle: int) -> int:
        return FIRST_USE_BASE - derive(self._seed, vehicle, 130) % FIRST_USE_SPAN

    def mileage(self, number: int) -> int:
        """Days from the vehicle's first use to the test times its daily miles."""
        vehicle = self.vehicle(number)
        miles_per_day = 5 + derive(self._seed, vehicle, 136) % 50
        return (TEST_DATE_BASE + number - self._first_use(vehicle)) // 86_400 * miles_per_day

    def items(self, number: int) -> list[Record]:
        count = derive(self._seed, number, 8) % (MAX_ITEMS + 1)
        found: list[Record] = []
        for position in range(count):
            h = derive(self._seed, number, 64 + position)
            found.append(self.item(
                1 + h % RFRS,
                RFR_TYPES[(h >> 16) % len(RFR_TYPES)],
                LOCATIONS[(h >> 24) % len(LOCATIONS)],
                dangerous=(h >> 40) % 20 == 0,
            ))  # fmt: skip
        return found

    def item(self, rfr_id: int, rfr_type: str, location: str, *, dangerous: bool) -> Record:
        """A failure item; its Text and Section are the reason's (RfrID 1..RFRS), as the
        relational side rebuilds them from the rfr lookups."""
        _, section, text = self._rfrs[rfr_id - 1]
        return {
            "RfrID": rfr_id, "Type": rfr_type, "Location": location, "Dangerous": dangerous,
            "Text": text, "Section": SECTIONS[section - 1],
        }  # fmt: skip

    def make_of(self, model: str) -> str:
        """The make a model name belongs to (ValueError when the model is unknown)."""
        return MAKES[int(str(self._models[self.lookup_id("model", model) - 1][1])) - 1]

    def record(self, number: int) -> Record:
        seed = self._seed
        vehicle = self.vehicle(number)
        _, make, model = self._models[derive(seed, vehicle, 131) % MODELS]
        fuel = self._pick(self._fuels, derive(seed, vehicle, 133))
        electric = FUEL_TYPES[fuel] == "Electric"
        return {
            "TestID": number,
            "VehicleID": vehicle,
            "TestDate": TEST_DATE_BASE + number,
            "TestClass": TEST_CLASSES[self._pick(self._classes, derive(seed, number, 2))],
            "TestType": TEST_TYPES[self._pick(self._types, derive(seed, number, 3))],
            "TestResult": TEST_RESULTS[self._pick(self._results, derive(seed, number, 4))],
            "Mileage": self.mileage(number),
            "PostcodeArea": self._areas[derive(seed, vehicle, 134) % POSTCODE_AREAS],
            "Make": MAKES[make - 1],
            "Model": model,
            "Colour": COLOURS[derive(seed, vehicle, 132) % len(COLOURS)],
            "FuelType": FUEL_TYPES[fuel],
            "CylinderCapacity": 0 if electric else 900 + derive(seed, vehicle, 135) % 2_100,
            "FirstUseDate": self._first_use(vehicle),
            "Items": self.items(number),
        }

    def update(self, number: int, stamp: int) -> Record:
        """A corrected odometer reading: the test's mileage plus 1 + the write stamp,
        so no two writes (nor the load) store the same value. Stamps reach 2**62:
        Mileage is a BIGINT in SQL (an int64 in MongoDB once above 2**31)."""
        return {"Mileage": self.mileage(number) + 1 + stamp}
