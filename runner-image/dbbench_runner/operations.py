"""What a workload asks a driver to do: one value per database call.

Each operation says what the plan expects it to find (`must_find`): True for
reads, scans, updates and read-modify-writes of records the plan says exist
(an empty answer is an error: the phase is not reading what it loaded); False
for a query that may rightly return nothing; None for inserts, which look
nothing up. The workload decides; the driver only reports the rows.

Values are created once per operation and never changed. They are not
`frozen` dataclasses only because a frozen __init__ sets each field through
object.__setattr__: ~1 µs more per operation on the runner's hot path
(profiled with cProfile; docs/decisions.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from dbbench_runner.datasets.base import Record


@dataclass(slots=True)
class Insert:
    records: tuple[Record, ...]
    # The highest record number in the batch (what the next phase starts after).
    last_number: int = 0
    kind: str = "insert"
    must_find: None = None  # looks nothing up
    # Records from files (dataset.source): each record's (file, line), so that a
    # row the database refuses is named to the user (sources.refused_row).
    origins: tuple[tuple[str, int], ...] = ()


@dataclass(slots=True)
class Read:
    key: str | int
    kind: str = "read"
    # Reads may go to replicas (readPreference); writes never do.
    secondary_ok: bool = False
    must_find: bool = True


@dataclass(slots=True)
class Update:
    key: str | int
    fields: Record
    kind: str = "update"
    must_find: bool = True


@dataclass(slots=True)
class Scan:
    start_key: str | int
    count: int
    kind: str = "scan"
    secondary_ok: bool = False
    must_find: bool = True  # the scan starts at a record the plan says exists


@dataclass(slots=True)
class Query:
    """One of field benchmark 2's queries on indexed4 (kind is the query name)."""

    kind: str
    number: int
    number1: int = 0
    secondary_ok: bool = False
    # True only when the loaded table cannot give an empty answer (workloads/query).
    must_find: bool = False


@dataclass(frozen=True, slots=True)
class ReadModifyWrite:
    """YCSB F: read one record, then update it; one operation, timed from the read."""

    key: str | int
    fields: Record
    kind: str = "readModifyWrite"
    must_find: bool = True


Operation = Insert | Read | Update | Scan | Query | ReadModifyWrite


@dataclass(slots=True)
class Status:
    """A driver's answer: ok, or the error's type; rows written or returned.

    `counted` is False when the server did not say how many rows the call
    touched (a MongoDB w:0 update): whether it found its document is unknown,
    so it is counted neither as found nor as not found."""

    ok: bool
    rows: int = 0
    error: str | None = None
    counted: bool = True
    # A batch insert the server refused in part: the first refused record's
    # position in the batch, when the server says (MongoDB's writeErrors).
    index: int | None = None

    @staticmethod
    def failed(error: str) -> Status:
        return Status(ok=False, error=error)
