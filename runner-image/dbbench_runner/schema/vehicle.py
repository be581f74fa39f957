"""MySQL / MariaDB tables and statements of the vehicle shape (field benchmark 4).

Normalized into exactly 14 tables, as the benchmark's relational side:
- vehicle_test: one row per test, lookup ids instead of texts; PRIMARY KEY
  (TestID) in idMode client (a plain index in server mode), and an index on
  (VehicleID, TestDate) for "the latest test of a vehicle";
- vehicle_test_item: one row per item, PRIMARY KEY (TestID, Position);
- 12 lookup tables whose rows the seed fixes (datasets.vehicle); every pod
  creates and fills them idempotently (CREATE TABLE IF NOT EXISTS, INSERT IGNORE).
A read is one statement: the vehicle's latest test (a derived table) LEFT
JOINed to its items and every lookup; it returns one row per item (one row
when there are none), ordered by Position.
Tests inserted with idMode server live in `vehicle_test_serverkey` and
`vehicle_test_serverkey_item` (the generator's table); the lookups are shared.
"""

from __future__ import annotations

from dbbench_runner.datasets.base import Record
from dbbench_runner.datasets.vehicle import Vehicle


def items_table(dataset: Vehicle) -> str:
    """The items of the tests in `dataset.table` (vehicle_test_item for the client-keyed)."""
    return f"{dataset.table}_item"


# Each lookup table's columns after its id (the id is the first column).
LOOKUP_COLUMNS: dict[str, tuple[str, str]] = {
    "test_class": ("TestClassID", "`Name` VARCHAR(8) NOT NULL"),
    "test_type": ("TestTypeID", "`Name` VARCHAR(32) NOT NULL"),
    "test_result": ("TestResultID", "`Name` VARCHAR(40) NOT NULL"),
    "make": ("MakeID", "`Name` VARCHAR(32) NOT NULL"),
    "model": ("ModelID", "`MakeID` SMALLINT NOT NULL,\n  `Name` VARCHAR(32) NOT NULL"),
    "colour": ("ColourID", "`Name` VARCHAR(16) NOT NULL"),
    "fuel_type": ("FuelTypeID", "`Name` VARCHAR(32) NOT NULL"),
    "postcode_area": ("PostcodeAreaID", "`Name` CHAR(2) NOT NULL"),
    "rfr_section": ("SectionID", "`Name` VARCHAR(64) NOT NULL"),
    "rfr": ("RfrID", "`SectionID` SMALLINT NOT NULL,\n  `Text` VARCHAR(255) NOT NULL"),
    "rfr_type": ("RfrTypeID", "`Name` VARCHAR(16) NOT NULL"),
    "item_location": ("LocationID", "`Name` VARCHAR(32) NOT NULL"),
}
LOOKUP_TABLES = tuple(LOOKUP_COLUMNS)


def tables(dataset: Vehicle) -> tuple[str, ...]:
    """The 14 tables a vehicle record's cost is spread over."""
    return (dataset.table, items_table(dataset), *LOOKUP_TABLES)


# vehicle_test's columns: (column, the record field it holds, the lookup table
# mapping that field's text to an id, or "" when the value is stored as is).
PARENT_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("TestID", "TestID", ""),
    ("VehicleID", "VehicleID", ""),
    ("TestDate", "TestDate", ""),
    ("TestClassID", "TestClass", "test_class"),
    ("TestTypeID", "TestType", "test_type"),
    ("TestResultID", "TestResult", "test_result"),
    ("Mileage", "Mileage", ""),
    ("PostcodeAreaID", "PostcodeArea", "postcode_area"),
    ("ModelID", "Model", "model"),
    ("ColourID", "Colour", "colour"),
    ("FuelTypeID", "FuelType", "fuel_type"),
    ("CylinderCapacity", "CylinderCapacity", ""),
    ("FirstUseDate", "FirstUseDate", ""),
)
ITEM_WIDTH = 6  # TestID, Position, RfrID, RfrTypeID, LocationID, Dangerous
# Mileage is a BIGINT: an update adds its write stamp (up to 2**62), so every
# update stores a value no earlier write stored (datasets.vehicle.update).
_BIG = {"TestID", "VehicleID", "TestDate", "FirstUseDate", "Mileage"}
_INT = {"CylinderCapacity"}


def _parent_type(column: str) -> str:
    if column in _BIG:
        return "BIGINT NOT NULL"
    if column in _INT:
        return "INT NOT NULL"
    return "SMALLINT NOT NULL"


def create_statements(dataset: Vehicle, id_mode: str) -> list[str]:
    """The 14 CREATE TABLE IF NOT EXISTS statements (idempotent: every pod runs them)."""
    parent = [f"`{c}` {_parent_type(c)}" for c, _, _ in PARENT_COLUMNS]
    parent.append("PRIMARY KEY (`TestID`)" if id_mode == "client" else "KEY `ix_TestID` (`TestID`)")
    parent.append("KEY `ix_VehicleID_TestDate` (`VehicleID`, `TestDate`)")
    create_parent = (
        f"CREATE TABLE IF NOT EXISTS `{dataset.table}` (\n  "
        + ",\n  ".join(parent)
        + "\n) ENGINE=InnoDB"
    )
    return [create_parent, *child_tables(dataset)]


def child_tables(dataset: Vehicle) -> list[str]:
    """The items table and the 12 lookup tables (schema.postgresql_vehicle translates them)."""
    statements = [
        f"CREATE TABLE IF NOT EXISTS `{items_table(dataset)}` (\n"
        "  `TestID` BIGINT NOT NULL,\n  `Position` TINYINT NOT NULL,\n"
        "  `RfrID` SMALLINT NOT NULL,\n  `RfrTypeID` SMALLINT NOT NULL,\n"
        "  `LocationID` SMALLINT NOT NULL,\n  `Dangerous` TINYINT NOT NULL,\n"
        "  PRIMARY KEY (`TestID`, `Position`)\n) ENGINE=InnoDB",
    ]
    for table, (key, rest) in LOOKUP_COLUMNS.items():
        statements.append(
            f"CREATE TABLE IF NOT EXISTS `{table}` (\n  `{key}` SMALLINT NOT NULL,\n  {rest},\n"
            f"  PRIMARY KEY (`{key}`)\n) ENGINE=InnoDB"
        )
    return statements


def lookup_rows(dataset: Vehicle) -> list[tuple[str, str, list[object]]]:
    """(table, VALUES list, parameters) of every lookup table's fixed rows."""
    rows: list[tuple[str, str, list[object]]] = []
    for lookup in dataset.lookups:
        one = "(" + ", ".join(["%s"] * len(lookup.rows[0])) + ")"
        params = [value for row in lookup.rows for value in row]
        rows.append((lookup.table, ", ".join([one] * len(lookup.rows)), params))
    return rows


def fill_statements(dataset: Vehicle) -> list[tuple[str, list[object]]]:
    """INSERT IGNORE of every lookup row: pods may run them at once, any number of times."""
    return [
        (f"INSERT IGNORE INTO `{table}` VALUES {values}", params)
        for table, values, params in lookup_rows(dataset)
    ]


def insert_statement(dataset: Vehicle, rows: int) -> str:
    columns = ", ".join(f"`{c}`" for c, _, _ in PARENT_COLUMNS)
    one = "(" + ", ".join(["%s"] * len(PARENT_COLUMNS)) + ")"
    return f"INSERT INTO `{dataset.table}` ({columns}) VALUES " + ", ".join([one] * rows)


def insert_params(dataset: Vehicle, records: tuple[Record, ...]) -> list[object]:
    params: list[object] = []
    for record in records:
        for _, field, lookup in PARENT_COLUMNS:
            value = record[field]
            params.append(dataset.lookup_id(lookup, str(value)) if lookup else value)
    return params


def items_params(dataset: Vehicle, records: tuple[Record, ...]) -> list[object]:
    """vehicle_test_item rows of a batch, ITEM_WIDTH values each, flattened."""
    params: list[object] = []
    for record in records:
        items = record["Items"]
        assert isinstance(items, list)
        for position, item in enumerate(items):
            params.extend((
                record["TestID"], position, item["RfrID"],
                dataset.lookup_id("rfr_type", item["Type"]),
                dataset.lookup_id("item_location", item["Location"]),
                int(item["Dangerous"]),
            ))  # fmt: skip
    return params


def items_statement(dataset: Vehicle, rows: int) -> str:
    one = "(" + ", ".join(["%s"] * ITEM_WIDTH) + ")"
    return (
        f"INSERT INTO `{items_table(dataset)}` (`TestID`, `Position`, `RfrID`, `RfrTypeID`, "
        "`LocationID`, `Dangerous`) VALUES " + ", ".join([one] * rows)
    )


# The latest test of a vehicle with its items and every lookup: 14 tables in one
# statement. Aliases are the record's field names; item columns are NULL for a
# test without items.
def read_statement(dataset: Vehicle) -> str:
    """The latest test of a vehicle (parameter: VehicleID), rebuilt from 14 tables;
    with `reads_by_test` (records from files) the parameter is a loaded test's
    TestID and the vehicle is that test's, looked up in the same statement."""
    vehicle = "%s"
    if dataset.reads_by_test:
        vehicle = f"(SELECT `VehicleID` FROM `{dataset.table}` WHERE `TestID` = %s)"
    return _READ.format(parent=dataset.table, items=items_table(dataset), vehicle=vehicle)


_READ = (
    "SELECT t.`TestID`, t.`VehicleID`, t.`TestDate`, tc.`Name` AS `TestClass`, "
    "tt.`Name` AS `TestType`, tr.`Name` AS `TestResult`, t.`Mileage`, "
    "pa.`Name` AS `PostcodeArea`, mk.`Name` AS `Make`, md.`Name` AS `Model`, "
    "co.`Name` AS `Colour`, fu.`Name` AS `FuelType`, t.`CylinderCapacity`, t.`FirstUseDate`, "
    "i.`Position`, i.`RfrID`, ty.`Name` AS `Type`, lo.`Name` AS `Location`, i.`Dangerous`, "
    "r.`Text`, se.`Name` AS `Section` "
    "FROM (SELECT * FROM `{parent}` WHERE `VehicleID` = {vehicle} "
    "ORDER BY `TestDate` DESC LIMIT 1) AS t "
    "LEFT JOIN `test_class` tc ON tc.`TestClassID` = t.`TestClassID` "
    "LEFT JOIN `test_type` tt ON tt.`TestTypeID` = t.`TestTypeID` "
    "LEFT JOIN `test_result` tr ON tr.`TestResultID` = t.`TestResultID` "
    "LEFT JOIN `postcode_area` pa ON pa.`PostcodeAreaID` = t.`PostcodeAreaID` "
    "LEFT JOIN `model` md ON md.`ModelID` = t.`ModelID` "
    "LEFT JOIN `make` mk ON mk.`MakeID` = md.`MakeID` "
    "LEFT JOIN `colour` co ON co.`ColourID` = t.`ColourID` "
    "LEFT JOIN `fuel_type` fu ON fu.`FuelTypeID` = t.`FuelTypeID` "
    "LEFT JOIN `{items}` i ON i.`TestID` = t.`TestID` "
    "LEFT JOIN `rfr` r ON r.`RfrID` = i.`RfrID` "
    "LEFT JOIN `rfr_section` se ON se.`SectionID` = r.`SectionID` "
    "LEFT JOIN `rfr_type` ty ON ty.`RfrTypeID` = i.`RfrTypeID` "
    "LEFT JOIN `item_location` lo ON lo.`LocationID` = i.`LocationID` "
    "ORDER BY i.`Position`"
)
