"""What the MySQL and PostgreSQL schemas share (schema.mysql, schema.postgresql).

The shapes' rows as bound parameters, which tables a record's cost is spread
over, which indexes a shape has, and the statements whose only difference
between the two dialects is how an identifier is quoted (`Number` on MySQL,
"Number" on PostgreSQL): a `Dialect` builds those from its `quote`, and takes
the rest (the CREATE statements, the vehicle shape's tables) from its engine.
Identifiers come from the shapes (fixed names), never from user input; values
never enter statement text: they are bound parameters (%s).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from dbbench_runner.datasets.base import Column, DatasetGenerator, Record
from dbbench_runner.datasets.flat45 import Flat45
from dbbench_runner.datasets.vehicle import Vehicle
from dbbench_runner.schema import vehicle

TAGS = "tags"
# Values per child row: news Tags (ID, position, tag); vehicle's items.
TAG_WIDTH = 3


def plain_columns(dataset: DatasetGenerator) -> tuple[Column, ...]:
    """Columns stored in the main table (Tags live in the child table)."""
    return tuple(c for c in dataset.columns if c.kind != TAGS)


def tags_column(dataset: DatasetGenerator) -> Column | None:
    return next((c for c in dataset.columns if c.kind == TAGS), None)


def tags_table(dataset: DatasetGenerator) -> str:
    return f"{dataset.table}_tags"


def key_indexed(dataset: DatasetGenerator, id_mode: str) -> bool:
    """Whether the key column has an index of its own: in idMode server (no primary
    key), except flat45 (benchmark 1's case d has no index on the md5 column)."""
    return id_mode != "client" and not isinstance(dataset, Flat45)


def insert_params(dataset: DatasetGenerator, records: tuple[Record, ...]) -> list[object]:
    if isinstance(dataset, Vehicle):
        return vehicle.insert_params(dataset, records)
    names = [c.name for c in plain_columns(dataset)]
    return [record[n] for record in records for n in names]


def tags_params(dataset: DatasetGenerator, records: tuple[Record, ...]) -> list[object]:
    """Rows of the news Tags child table: (ID, position, tag) per tag, flattened."""
    tags = tags_column(dataset)
    assert tags is not None
    key = dataset.key_column
    params: list[object] = []
    for record in records:
        values = record[tags.name]
        assert isinstance(values, list)
        for position, tag in enumerate(values):
            params.extend((record[key], position, tag))
    return params


def has_child_table(dataset: DatasetGenerator) -> bool:
    """Whether a record's insert also writes child rows (news Tags, vehicle Items)."""
    return isinstance(dataset, Vehicle) or tags_column(dataset) is not None


def child_params(dataset: DatasetGenerator, records: tuple[Record, ...]) -> list[object]:
    """The child-table rows of a batch, flattened (child_width values per row)."""
    if isinstance(dataset, Vehicle):
        return vehicle.items_params(dataset, records)
    return tags_params(dataset, records)


def child_width(dataset: DatasetGenerator) -> int:
    return vehicle.ITEM_WIDTH if isinstance(dataset, Vehicle) else TAG_WIDTH


def read_is_joined(dataset: DatasetGenerator) -> bool:
    """Whether a Read's statement returns one row per child row (vehicle: per item)."""
    return isinstance(dataset, Vehicle)


def update_params(dataset: DatasetGenerator, key: str | int, fields: Record) -> list[object]:
    return [*(fields[n] for n in dataset.update_columns), key]


def query_params(name: str, number: int, number1: int) -> list[object]:
    if name == "twoFieldProjection":
        return [number, number1]
    if name == "scan100":
        return []
    return [number]


def storage_tables(dataset: DatasetGenerator) -> tuple[str, ...]:
    """The tables a record's cost is spread over: the main table and its child and
    lookup tables. The other idMode's table in the same database is not among them."""
    if isinstance(dataset, Vehicle):
        return vehicle.tables(dataset)
    if tags_column(dataset) is not None:
        return (dataset.table, tags_table(dataset))
    return (dataset.table,)


# Field benchmark 2's queries on indexed4 (or indexed4_serverkey), with the same
# meaning as the MongoDB finds in schema.mongodb (no index hints: the optimizer
# chooses). Braces hold identifiers, quoted by the dialect.
QUERIES: dict[str, str] = {
    "indexedEquality": "SELECT * FROM {table} WHERE {Number} = %s LIMIT 10",
    "twoFieldProjection": (
        "SELECT {Number}, {Number1} FROM {table} WHERE {Number} = %s AND {Number1} >= %s LIMIT 10"
    ),
    "sortSkip": (
        "SELECT * FROM {table} WHERE {Number} >= %s ORDER BY {Date} DESC LIMIT 10 OFFSET 100"
    ),
    "scan100": "SELECT * FROM {table} LIMIT 100",
}


class VehicleSchema(Protocol):
    """An engine's statements of the vehicle shape (schema.vehicle, schema.postgresql_vehicle)."""

    def create_statements(self, dataset: Vehicle, id_mode: str) -> list[str]: ...

    def fill_statements(self, dataset: Vehicle) -> list[tuple[str, list[object]]]: ...

    def insert_statement(self, dataset: Vehicle, rows: int) -> str: ...

    def items_statement(self, dataset: Vehicle, rows: int) -> str: ...

    def read_statement(self, dataset: Vehicle) -> str: ...


@dataclass(frozen=True)
class Dialect:
    """The statements a SQL driver runs against one engine, for every shape."""

    quote: Callable[[str], str]
    vehicle: VehicleSchema
    # The main (and news Tags) tables and indexes of the shapes other than vehicle.
    create_tables: Callable[[DatasetGenerator, str], list[str]]

    def create_statements(self, dataset: DatasetGenerator, id_mode: str) -> list[str]:
        """Idempotent DDL (IF NOT EXISTS): every pod runs it."""
        if isinstance(dataset, Vehicle):
            return self.vehicle.create_statements(dataset, id_mode)
        return self.create_tables(dataset, id_mode)

    def fill_statements(self, dataset: DatasetGenerator) -> list[tuple[str, list[object]]]:
        """Statements with parameters that fill fixed tables after creating them
        (vehicle's lookups); pods may run them at once, any number of times."""
        if isinstance(dataset, Vehicle):
            return self.vehicle.fill_statements(dataset)
        return []

    def insert_statement(self, dataset: DatasetGenerator, rows: int) -> str:
        if isinstance(dataset, Vehicle):
            return self.vehicle.insert_statement(dataset, rows)
        q = self.quote
        names = [c.name for c in plain_columns(dataset)]
        one = "(" + ", ".join(["%s"] * len(names)) + ")"
        return (
            f"INSERT INTO {q(dataset.table)} ({', '.join(q(n) for n in names)}) VALUES "
            + ", ".join([one] * rows)
        )

    def child_statement(self, dataset: DatasetGenerator, rows: int) -> str:
        """The child rows of a batch (news Tags; vehicle's items)."""
        if isinstance(dataset, Vehicle):
            return self.vehicle.items_statement(dataset, rows)
        q = self.quote
        values = ", ".join(["(%s, %s, %s)"] * rows)
        return (
            f"INSERT INTO {q(tags_table(dataset))} ({q(dataset.key_column)}, {q('position')}, "
            f"{q('tag')}) VALUES {values}"
        )

    def read_statement(self, dataset: DatasetGenerator) -> str:
        """A Read: the record by key; for vehicle, the vehicle's latest test, joined."""
        if isinstance(dataset, Vehicle):
            return self.vehicle.read_statement(dataset)
        return self.record_read_statement(dataset)

    def record_read_statement(self, dataset: DatasetGenerator) -> str:
        """One record by its key (read-modify-write reads the record it writes)."""
        q = self.quote
        return f"SELECT * FROM {q(dataset.table)} WHERE {q(dataset.key_column)} = %s"

    def update_statement(self, dataset: DatasetGenerator) -> str:
        q = self.quote
        sets = ", ".join(f"{q(n)} = %s" for n in dataset.update_columns)
        return f"UPDATE {q(dataset.table)} SET {sets} WHERE {q(dataset.key_column)} = %s"

    def scan_statement(self, dataset: DatasetGenerator, count: int) -> str:
        q = self.quote
        key = q(dataset.key_column)
        return (
            f"SELECT * FROM {q(dataset.table)} WHERE {key} >= %s ORDER BY {key} LIMIT {int(count)}"
        )

    def query_statement(self, dataset: DatasetGenerator, name: str) -> str:
        q = self.quote
        names = ("Number", "Number1", "Date")
        return QUERIES[name].format(table=q(dataset.table), **{n: q(n) for n in names})

    def statement(self, dataset: DatasetGenerator, kind: str, size: int = 0) -> str:
        """The driver's statements by kind; `size`: a scan's count, a batch's rows."""
        if kind == "read":
            return self.read_statement(dataset)
        if kind == "record":
            return self.record_read_statement(dataset)
        if kind == "update":
            return self.update_statement(dataset)
        if kind == "scan":
            return self.scan_statement(dataset, size)
        if kind == "insert":
            return self.insert_statement(dataset, size)
        if kind == "child":
            return self.child_statement(dataset, size)
        raise ValueError(f"unknown statement kind {kind}")
