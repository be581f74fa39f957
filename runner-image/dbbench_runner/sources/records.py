"""A source row as a record of the data set's shape.

Each mapped column becomes its field, converted to the type of the shape's
column (datasets.base.Column) and checked as the databases would check it
(integers, lengths, the vehicle shape's lookup names), so that a value that
does not fit fails with its file and line before any statement is sent, and
every engine of a run stores the same records.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable

from dbbench_runner.datasets import DatasetGenerator
from dbbench_runner.datasets.base import Column, Record
from dbbench_runner.datasets.vehicle import LOCATIONS, MAKES, RFR_TYPES, RFRS, Vehicle
from dbbench_runner.schema.vehicle import PARENT_COLUMNS

_INTEGER = re.compile(r"^\s*[+-]?[0-9]+\s*$")
INT64 = 1 << 63
# vehicle_test_item.Position is a TINYINT.
MAX_ITEMS = 127


class BadValueError(ValueError):
    """A value that does not convert; the message says why (the caller adds where)."""


def integer(value: object) -> int:
    """Decimal text or a JSON integer, within 64 bits."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise BadValueError(f"{value!r} is not an integer")
    if isinstance(value, str):
        if not _INTEGER.match(value):
            raise BadValueError(f"{value!r} is not an integer")
        value = int(value)
    if not -INT64 <= value < INT64:
        raise BadValueError(f"{value} does not fit in 64 bits")
    return value


def text(value: object, size: int) -> str:
    """A string (a JSON integer is taken as its decimal text) of at most `size` characters."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise BadValueError(f"{value!r} is not text")
    if len(value) > size:
        raise BadValueError(f"{len(value)} characters; the shape's column holds at most {size}")
    return value


def timestamp(value: object) -> dt.datetime:
    """ISO 8601; with an offset, converted to UTC (the shape's datetimes are naive UTC)."""
    if not isinstance(value, str):
        raise BadValueError(f"{value!r} is not an ISO 8601 date and time")
    try:
        parsed = dt.datetime.fromisoformat(value.strip())
    except ValueError:
        raise BadValueError(f"{value!r} is not an ISO 8601 date and time") from None
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(dt.UTC).replace(tzinfo=None)
    return parsed


def json_list(value: object) -> list[object]:
    """A JSON array, or (a CSV cell) the JSON text of one."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise BadValueError(f"{str(value)[:40]!r} is not the JSON text of an array") from None
    if not isinstance(value, list):
        raise BadValueError(f"{str(value)[:40]!r} is not a JSON array")
    return value


def tags(value: object, size: int) -> list[str]:
    return [text(tag, size) for tag in json_list(value)]


def _named(value: object, names: tuple[str, ...], what: str) -> str:
    if value not in names:
        raise BadValueError(f"{value!r} is not a {what} of the vehicle shape")
    return str(value)


def items(vehicle: Vehicle) -> Callable[[object], list[Record]]:
    def convert(value: object) -> list[Record]:
        listed = json_list(value)
        if len(listed) > MAX_ITEMS:
            raise BadValueError(f"{len(listed)} items; a test holds at most {MAX_ITEMS}")
        found: list[Record] = []
        for position, item in enumerate(listed):
            if not isinstance(item, dict) or set(item) != {
                "RfrID",
                "Type",
                "Location",
                "Dangerous",
            }:
                raise BadValueError(
                    f"item {position}: an item is {{RfrID, Type, Location, Dangerous}}"
                )
            rfr = integer(item["RfrID"])
            if not 1 <= rfr <= RFRS:
                raise BadValueError(f"item {position}: RfrID {rfr} is not in 1..{RFRS}")
            dangerous = item["Dangerous"]
            if dangerous not in (True, False, 0, 1):
                raise BadValueError(f"item {position}: Dangerous {dangerous!r} is not a boolean")
            found.append(vehicle.item(
                rfr, _named(item["Type"], RFR_TYPES, "failure item Type"),
                _named(item["Location"], LOCATIONS, "failure item Location"),
                dangerous=bool(dangerous),
            ))  # fmt: skip
        return found

    return convert


def converter(column: Column, generator: DatasetGenerator) -> Callable[[object], object]:
    """How a value of `column` is read."""
    match column.kind:
        case "int" | "key_int":
            return integer
        case "str":
            return lambda value: text(value, column.size)
        case "datetime":
            return timestamp
        case "tags":
            return lambda value: tags(value, column.size)
        case "items" if isinstance(generator, Vehicle):
            return items(generator)
    raise ValueError(f"{column.name}: a {column.kind} column cannot be read from a file")


# The vehicle fields the relational side stores as a lookup id (its table's names).
_LOOKUPS = {field: table for _, field, table in PARENT_COLUMNS if table}


def check_vehicle(vehicle: Vehicle, record: Record) -> None:
    """The lookup names MySQL, MariaDB and PostgreSQL store as ids (and MongoDB as
    text): unknown ones cannot be stored, and a Make that is not its Model's would
    read back as the model's make from the relational side only."""
    for field, table in _LOOKUPS.items():
        try:
            vehicle.lookup_id(table, record[field])
        except ValueError:
            raise BadValueError(
                f"{field} {record[field]!r} is not a name in the vehicle shape's {table} "
                "lookup table (the relational engines store its id)"
            ) from None
    make = _named(record["Make"], MAKES, "Make")
    if vehicle.make_of(str(record["Model"])) != make:
        raise BadValueError(
            f"Make {make!r} is not the make of Model {record['Model']!r} "
            f"({vehicle.make_of(str(record['Model']))!r} in the shape's model table)"
        )
