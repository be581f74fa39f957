"""The stability series: one point per `reportEvery` records (insert) or operations.

Pure: it reads checkpoint marks, never a clock. A mark is what one connection
did since its previous mark: (epoch at its end, operations, records written,
latency sum in microseconds). Marks of all connections, processes and pods
are ordered by time and accumulated; a window ends where the running total of
the series unit crosses a multiple of `every`.

A mark that crosses a window boundary (a batch of 100 records when 20,000
records are due) is split proportionally: the boundary time is interpolated
linearly between the previous mark and this one, and the mark's operations,
records and latency go to each side in the same proportion as its unit
count. So windows hold exactly `every` units, and the series of the union of
pods' marks is the same whether they were written by one pod or several.
With one connection and `every` a multiple of the mark size the windows are
exact; with W connections the running total lags by about half a mark per
connection, a constant that cancels out of window lengths.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

SeriesUnit = Literal["records", "operations"]
Mark = tuple[float, int, int, int]  # epoch, operations, records, latency sum (us)


def series_unit(phase_type: str) -> SeriesUnit:
    """Insert phases count their windows in records; every other phase in operations."""
    return "records" if phase_type == "insert" else "operations"


@dataclass(frozen=True)
class Window:
    """One series point: totals at the window's end and what happened within it."""

    operations: float  # cumulative at the window's end
    records: float
    epoch: float  # end of the window
    seconds: float
    window_operations: float
    window_records: float
    window_latency_us: float

    @property
    def ops_per_second(self) -> float:
        return self.window_operations / self.seconds

    @property
    def records_per_second(self) -> float:
        return self.window_records / self.seconds

    @property
    def mean_latency_ms(self) -> float:
        if self.window_operations <= 0:
            return 0.0
        return self.window_latency_us / self.window_operations / 1000.0


@dataclass
class _Open:
    """The window being filled."""

    start: float
    operations: float = 0.0
    records: float = 0.0
    latency_us: float = 0.0

    def take(self, mark: Mark, share: float) -> None:
        self.operations += mark[1] * share
        self.records += mark[2] * share
        self.latency_us += mark[3] * share


def stability_series(
    marks: Iterable[Mark], every: int, start: float, unit: SeriesUnit
) -> list[Window]:
    """Windows of exactly `every` units from `start` (the end of warm-up)."""
    return list(windows_of_ordered(sorted(marks), every, start, unit))


def windows_of_ordered(
    marks: Iterable[Mark], every: int, start: float, unit: SeriesUnit
) -> Iterator[Window]:
    """As stability_series, from marks already in order (a merge streams all pods'
    marks, too many to sort in memory), each window as it closes."""
    if every < 1:
        raise ValueError(f"reportEvery must be at least 1, not {every}")
    return _windows(marks, every, start, unit)


def _windows(marks: Iterable[Mark], every: int, start: float, unit: SeriesUnit) -> Iterator[Window]:
    boundary = every
    total = 0  # the unit's running total before the current mark
    operations_before = records_before = 0
    previous = start
    current = _Open(start)
    for mark in marks:
        epoch, count = mark[0], (mark[2] if unit == "records" else mark[1])
        taken = 0.0  # share of this mark already given to closed windows
        while count > 0 and total + count >= boundary:
            reach = (boundary - total) / count
            current.take(mark, reach - taken)
            crossed = previous + (epoch - previous) * reach
            yield Window(
                operations=operations_before + mark[1] * reach,
                records=records_before + mark[2] * reach,
                epoch=crossed,
                seconds=max(crossed - current.start, 1e-9),
                window_operations=current.operations,
                window_records=current.records,
                window_latency_us=current.latency_us,
            )
            current = _Open(crossed)
            taken = reach
            boundary += every
        current.take(mark, 1.0 - taken)
        total += count
        operations_before += mark[1]
        records_before += mark[2]
        previous = epoch
