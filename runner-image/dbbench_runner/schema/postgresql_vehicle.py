"""PostgreSQL tables and statements of the vehicle shape (field benchmark 4).

The same 14 tables, keys and one-statement read as schema.vehicle (MySQL),
whose column lists and statements are the source: identifiers are re-quoted
with double quotes, TINYINT becomes SMALLINT (PostgreSQL has no TINYINT),
CHAR becomes VARCHAR (PostgreSQL pads CHAR with blanks when read), indexes
are separate statements, and INSERT IGNORE is INSERT ... ON CONFLICT DO
NOTHING. The read's ORDER BY Position puts a test without items (one row,
NULL Position) first in MySQL and last here: it is the only row either way.
"""

from __future__ import annotations

from dbbench_runner.datasets.vehicle import Vehicle
from dbbench_runner.schema import vehicle as source


def dialect(mysql_text: str) -> str:
    """A statement or column list of schema.vehicle in PostgreSQL's dialect."""
    text = mysql_text.replace("`", '"').replace("TINYINT", "SMALLINT")
    return text.replace(" CHAR(", " VARCHAR(").replace(" ENGINE=InnoDB", "")


def create_statements(dataset: Vehicle, id_mode: str) -> list[str]:
    """The 14 CREATE TABLE IF NOT EXISTS statements and the two indexes (idempotent);
    the tests' tables are the generator's (`vehicle_test` or `vehicle_test_serverkey`)."""
    parent_table = dataset.table
    items, *lookups = (dialect(s) for s in source.child_tables(dataset))
    parent = [f'"{c}" {source._parent_type(c)}' for c, _, _ in source.PARENT_COLUMNS]
    if id_mode == "client":
        parent.append('PRIMARY KEY ("TestID")')
    statements = [
        f'CREATE TABLE IF NOT EXISTS "{parent_table}" (\n  ' + ",\n  ".join(parent) + "\n)",
        items,
    ]
    if id_mode == "server":
        statements.append(
            f'CREATE INDEX IF NOT EXISTS "{parent_table}_ix_TestID" ON "{parent_table}" ("TestID")'
        )
    statements.append(
        f'CREATE INDEX IF NOT EXISTS "{parent_table}_ix_VehicleID_TestDate" '
        f'ON "{parent_table}" ("VehicleID", "TestDate")'
    )
    return statements + lookups


def fill_statements(dataset: Vehicle) -> list[tuple[str, list[object]]]:
    """Every lookup row, ON CONFLICT DO NOTHING: pods may run them any number of times."""
    return [
        (f'INSERT INTO "{table}" VALUES {values} ON CONFLICT DO NOTHING', params)
        for table, values, params in source.lookup_rows(dataset)
    ]


def insert_statement(dataset: Vehicle, rows: int) -> str:
    return dialect(source.insert_statement(dataset, rows))


def items_statement(dataset: Vehicle, rows: int) -> str:
    return dialect(source.items_statement(dataset, rows))


def read_statement(dataset: Vehicle) -> str:
    return dialect(source.read_statement(dataset))
