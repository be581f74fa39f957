"""Records read from files (``spec.dataset.source``) instead of generated.

The first insert phase of a target (StepConfig.loads_source) loads them: each
connection streams the files and inserts its own rows (files.py), converted
to the shape's records (records.py). What the runner guarantees:

- exactly the files' rows: every row goes to one connection, a row that does
  not parse fails the step, a key outside 1..records fails it, a key loaded
  twice is refused by the database (the shapes' keys are primary keys) and
  fails it, and a reader that counts a different number of rows than
  dataset.records fails it, naming the count (`source_rows`);
- a refused batch is narrowed to its row (`refused_row`): the step fails with
  that row's file, line and the database's error;
- flat memory: a row at a time per connection, a batch at most.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from dbbench_contract.api.sources import DataSource
from dbbench_runner.config import StepConfig
from dbbench_runner.datasets import DatasetGenerator
from dbbench_runner.datasets.base import Record
from dbbench_runner.datasets.vehicle import Vehicle
from dbbench_runner.operations import Insert, Operation, Status
from dbbench_runner.sources.files import (
    RawRow,
    SourceError,
    SourceFile,
    csv_rows,
    jsonl_rows,
    source_files,
)
from dbbench_runner.sources.records import BadValueError, check_vehicle, converter

__all__ = ["SourceError", "SourceRow", "check_source", "refused_row", "source_rows"]

# The server's error code of a duplicate key: MySQL/MariaDB ER_DUP_ENTRY,
# PostgreSQL unique_violation, MongoDB DuplicateKey (drivers' error texts end in it).
DUPLICATE_KEY_CODES = ("(1062)", "(23505)", "(11000)")


@dataclass(frozen=True, slots=True)
class SourceRow:
    file: str
    line: int
    record: Record


class RowReader:
    """Rows of one source as records of one shape (keys checked against 1..records)."""

    def __init__(self, source: DataSource, generator: DatasetGenerator, records: int) -> None:
        self._source = source
        self._records = records
        self._key = generator.key_column
        self._vehicle = generator if isinstance(generator, Vehicle) else None
        # (field, column, converter) in the shape's column order; the key first.
        self._fields = [
            (column.name, source.key if column.name == self._key else source.fields[column.name],
             converter(column, generator))
            for column in generator.columns
            if column.name == self._key or column.name in source.fields
        ]  # fmt: skip
        self._empty = tuple(source.empty)
        self._positions: dict[str, int] = {}
        self._width = 0

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(column for _, column, _ in self._fields)

    def use_header(self, header: RawRow) -> None:
        """A CSV file's first row: where each mapped column is."""
        names = header.values
        assert isinstance(names, list)
        positions: dict[str, int] = {}
        for position, name in enumerate(names):
            if name in positions and name in self.columns:
                raise SourceError(header.file, header.line, f"the header names column {name} twice")
            positions.setdefault(name, position)
        missing = [c for c in self.columns if c not in positions]
        if missing:
            raise SourceError(
                header.file,
                header.line,
                f"the header has no column {', '.join(missing)} (it has: {', '.join(names)}); "
                "fix source.key / source.fields",
            )
        self._positions = positions
        self._width = len(names)

    def record(self, row: RawRow) -> Record:
        values = self._values(row)
        record: Record = {}
        for field, column, convert in self._fields:
            try:
                record[field] = convert(values(column))
            except BadValueError as exc:
                raise SourceError(row.file, row.line, f"{field} (column {column}): {exc}") from None
        key = record[self._key]
        if not isinstance(key, int) or not 1 <= key <= self._records:
            raise SourceError(
                row.file, row.line,
                f"key {self._source.key} = {key}: not a record number 1..{self._records} "
                "(source.key must hold the record numbers 1..dataset.records)",
            )  # fmt: skip
        for field in self._empty:
            record[field] = []
        if self._vehicle is not None:
            try:
                check_vehicle(self._vehicle, record)
            except BadValueError as exc:
                raise SourceError(row.file, row.line, str(exc)) from None
        return record

    def _values(self, row: RawRow) -> Callable[[str], object]:
        if isinstance(row.values, list):
            if len(row.values) != self._width:
                raise SourceError(
                    row.file, row.line,
                    f"{len(row.values)} values; the header has {self._width} columns",
                )  # fmt: skip
            listed, positions = row.values, self._positions
            return lambda column: listed[positions[column]]
        try:
            document = json.loads(row.values)
        except ValueError as exc:
            raise SourceError(row.file, row.line, f"not a JSON object: {exc}") from None
        if not isinstance(document, dict):
            raise SourceError(row.file, row.line, "not a JSON object")

        def field(name: str) -> object:
            if document.get(name) is None:
                absent = "null" if name in document else "absent"
                raise SourceError(row.file, row.line, f"field {name} is {absent}")
            return document[name]

        return field


def _raw_rows(file: SourceFile, source: DataSource, reader: RowReader) -> Iterator[RawRow]:
    if source.format == "jsonl":
        return jsonl_rows(file, source)
    rows = csv_rows(file, source)
    header = next(rows, None)
    if header is None:
        raise SourceError(file.name, 1, "empty: a CSV file starts with a header row")
    reader.use_header(header)
    return rows


def source_rows(
    config: StepConfig, generator: DatasetGenerator, worker: int
) -> Iterator[SourceRow]:
    """The rows connection `worker` loads (w, w+W, ... across the files), as records;
    once the files are read, their row count must be dataset.records."""
    source = config.dataset.source
    assert source is not None
    workers, records = config.workers_total, config.dataset.records
    reader = RowReader(source, generator, records)
    index = 0
    for file in source_files(source, config.dataset.source_root):
        for raw in _raw_rows(file, source, reader):
            if index % workers == worker:
                yield SourceRow(raw.file, raw.line, reader.record(raw))
            index += 1
    if index != records:
        raise SourceError(
            f"claim {source.claim_name}",
            None,
            f"the files hold {index} records, dataset.records is {records}: set "
            f"dataset.records: {index}",
        )


def check_source(config: StepConfig, generator: DatasetGenerator) -> None:
    """Before anything is loaded: every file is there and every CSV header has the
    mapped columns."""
    source = config.dataset.source
    assert source is not None
    reader = RowReader(source, generator, config.dataset.records)
    for file in source_files(source, config.dataset.source_root):
        if source.format == "csv":
            _raw_rows(file, source, reader)
        else:
            with file.open_binary(source):
                pass


def refused_row(
    execute: Callable[[Operation], Status], insert: Insert, status: Status
) -> SourceError:
    """The row of a refused batch, with the database's reason.

    A batch the database refused whole (SQL: one statement or transaction) is
    sent again row by row until a row is refused; MongoDB names the record it
    refused. A duplicate key says so."""
    candidates = range(len(insert.records))
    if status.index is not None:
        candidates = range(status.index, status.index + 1)
    elif status.rows:
        candidates = range(0)  # written in part, the server did not say which: the batch
    for position in candidates:
        record = insert.records[position]
        single = status if len(insert.records) == 1 else execute(Insert((record,)))
        if not single.ok:
            file, line = insert.origins[position]
            return SourceError(file, line, _refusal(single.error or "", record))
    file, line = insert.origins[0]
    last = insert.origins[-1][1]
    return SourceError(
        file, line, f"the database refused the rows of lines {line}-{last}: {status.error}"
    )


def _refusal(error: str, record: Record) -> str:
    key = next(iter(record.items()))  # RowReader puts the key first
    if error.endswith(DUPLICATE_KEY_CODES):
        return (
            f"key {key[0]} {key[1]} is already loaded: the key column holds it twice "
            f"(the database refused this row: {error})"
        )
    return f"the database refused this row: {error}"
