"""Data growth: how each phase a growth measures fared as its table grew (pure).

A phase with `growth` loads its table in parts and runs the phases it
`measure`s after each part (``dbbench_contract.api.phase_order``). Every step
summary says how many records the table held when the step began
(`recordsBefore`): the x of these figures. For each of those phases and each
operation type, ops/s and p99 against the records stored, one line per
target (the mean over the repeats run at the same count); the growing insert
phase itself is drawn too, in records/s, so that the insert rate sits beside
the reads it fed (field benchmark 2's one chart against documents stored).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass

from dbbench_report import plots
from dbbench_report.cells import num, row, table, text
from dbbench_report.figures import Line
from dbbench_report.reading import Run, Step
from dbbench_report.sections import chart, grid, section


@dataclass(frozen=True)
class Point:
    """One target's figures for one operation type at one table size."""

    target: str
    records: int  # records stored when the steps began
    rate: float  # ops/s (records/s for inserts), mean over the repeats at this size
    p99_ms: float
    repeats: int


@dataclass(frozen=True)
class GrowthFigure:
    phase: str
    operation: str
    points: tuple[Point, ...]

    @property
    def unit(self) -> str:
        return "records/s" if self.operation == "insert" else "ops/s"

    def lines(self, figure: str) -> list[Line]:
        """One line per target: `figure` is "rate" or "p99"."""
        by_target: dict[str, list[Point]] = defaultdict(list)
        for point in self.points:
            by_target[point.target].append(point)
        return [
            Line(target, tuple(float(p.records) for p in points),
                 tuple(p.rate if figure == "rate" else p.p99_ms for p in points))
            for target, points in by_target.items()
        ]  # fmt: skip


def grown_phases(run: Run) -> list[str]:
    """The growing insert phase and the phases it measures, in spec order."""
    names: set[str] = set()
    for phase in run.phases:
        if phase.growth is not None:
            names |= {phase.name, *phase.growth.measure}
    return [p for p in run.phase_names() if p in names]


def _rate(step: Step, operation: str) -> tuple[float, float]:
    values = step.summary.operations_by_type[operation]
    rate = values.records_per_second if operation == "insert" else None
    return (values.throughput if rate is None else rate), float(values.latency_ms.p99)


def growth_figures(run: Run) -> list[GrowthFigure]:
    """A figure per grown phase and operation type, its points sorted by records."""
    figures = []
    for phase in grown_phases(run):
        steps = [s for s in run.steps_of(phase=phase) if s.summary.records_before is not None]
        operations = sorted({op for s in steps for op in s.summary.operations_by_type})
        for operation in operations:
            grouped: dict[tuple[str, int], list[tuple[float, float]]] = defaultdict(list)
            for step in steps:
                if operation in step.summary.operations_by_type:
                    records = step.summary.records_before or 0
                    grouped[(step.target, records)].append(_rate(step, operation))
            order = {t: i for i, t in enumerate(run.target_names())}
            points = tuple(
                Point(target, records, statistics.fmean(r for r, _ in found),
                      statistics.fmean(p for _, p in found), len(found))
                for (target, records), found in sorted(
                    grouped.items(), key=lambda item: (order.get(item[0][0], 0), item[0][1]))
            )  # fmt: skip
            if points:
                figures.append(GrowthFigure(phase, operation, points))
    return figures


def section_html(run: Run) -> str:
    """The report's "Data growth" section; empty for a run without a growth."""
    figures = growth_figures(run)
    if not figures:
        return ""
    parts = [
        "<p>The phases a growth measures, run after each part of the load: each operation "
        "type's rate and p99 against the records the table held when the step began, one "
        "line per target (the mean over the repeats run at that size). The growing load "
        "itself is drawn in records/s.</p>"
    ]
    rows = []
    for figure in figures:
        for kind, ylabel in (("rate", figure.unit), ("p99", "p99 (ms)")):
            lines = figure.lines(kind)
            title = f"{figure.phase} {figure.operation}: {ylabel} vs records stored"
            svg = plots.line_chart(title, lines, xlabel="records stored", ylabel=ylabel,
                                   marker=True)  # fmt: skip
            key = f"growth-{kind}-{figure.phase}-{figure.operation}"
            parts.append(chart(key, title, svg, len(lines)))
        for p in figure.points:
            rows.append(row(
                [text(p.target), text(figure.phase), text(figure.operation),
                 num("records", p.records), num("rate", p.rate), num("p99Ms", p.p99_ms, 3),
                 num("repeats", p.repeats)],
                {"target": p.target, "phase": figure.phase, "op": figure.operation,
                 "records": p.records},
            ))  # fmt: skip
    headers = ["target", "phase", "operation", "records stored", "ops/s (records/s: insert)",
               "p99 (ms)", "repeats"]  # fmt: skip
    return section("growth", "Data growth", grid(parts) + table("growth", headers, rows))
