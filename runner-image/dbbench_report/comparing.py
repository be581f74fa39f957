"""Several runs in one table (pure): throughput and p99 per target and phase, the
relative difference to the first run, and whether the repeats say it is noise.

A difference is flagged "noise" when both runs repeated the phase and the
ranges of their repeats' throughput (min..max) overlap: the runs disagree less
than one run disagrees with itself. With a single repeat on either side there
is nothing to judge by ("1 repeat").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dbbench_report.figures import Spread, latency, throughput
from dbbench_report.reading import Run


@dataclass(frozen=True)
class Cell:
    throughput: Spread
    p99: Spread


@dataclass(frozen=True)
class Row:
    target: str
    phase: str
    cells: tuple[Cell | None, ...]  # one per run; None when that run lacks the step

    def relative(self, index: int, figure: str = "throughput") -> float | None:
        """(run[index] - run[0]) / run[0], in percent, of the mean over repeats."""
        base, other = self.cells[0], self.cells[index]
        if base is None or other is None:
            return None
        a, b = getattr(base, figure).mean, getattr(other, figure).mean
        return None if a == 0 else (b - a) / a * 100.0

    def noise(self, index: int) -> str:
        base, other = self.cells[0], self.cells[index]
        if base is None or other is None:
            return "missing"
        x, y = base.throughput, other.throughput
        if x.n < 2 or y.n < 2:
            return "1 repeat"
        overlap = x.low <= y.high and y.low <= x.high
        return "noise" if overlap else "significant"


def _keys(runs: Sequence[Run]) -> list[tuple[str, str]]:
    keys: list[tuple[str, str]] = []
    for run in runs:
        for target in run.target_names():
            for phase in run.phase_names():
                if run.steps_of(target, phase) and (target, phase) not in keys:
                    keys.append((target, phase))
    return keys


def compare(runs: Sequence[Run]) -> list[Row]:
    if len(runs) < 2:
        raise ValueError("compare needs at least two runs")
    rows = []
    for target, phase in _keys(runs):
        cells = tuple(
            Cell(throughput(run, target, phase), latency(run, target, phase, "p99"))
            if run.steps_of(target, phase)
            else None
            for run in runs
        )
        rows.append(Row(target, phase, cells))
    return rows


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1f}%"


def _mean(cell: Cell | None, figure: str, digits: int) -> str:
    return "-" if cell is None else f"{getattr(cell, figure).mean:,.{digits}f}"


def labels(runs: Sequence[Run]) -> list[str]:
    names = [run.title for run in runs]
    return [f"{n}#{i + 1}" if names.count(n) > 1 else n for i, n in enumerate(names)]


def table(runs: Sequence[Run], rows: Sequence[Row]) -> str:
    """Plain text: one line per target and phase, runs side by side."""
    names = labels(runs)
    header = ["TARGET", "PHASE"]
    for i, name in enumerate(names):
        header.append(f"{name} ops/s")
        if i:
            header.append("Δ ops/s")
        header.append(f"{name} p99 ms")
        if i:
            header += ["Δ p99", "repeats say"]
    lines = [header]
    for row in rows:
        line = [row.target, row.phase]
        for i, cell in enumerate(row.cells):
            line.append(_mean(cell, "throughput", 1))
            if i:
                line.append(_pct(row.relative(i)))
            line.append(_mean(cell, "p99", 3))
            if i:
                line += [_pct(row.relative(i, "p99")), row.noise(i)]
        lines.append(line)
    widths = [max(len(line[c]) for line in lines) for c in range(len(header))]
    return "\n".join(
        "  ".join(v.ljust(w) if c < 2 else v.rjust(w) for c, (v, w) in
                  enumerate(zip(line, widths, strict=True))).rstrip()
        for line in lines
    ) + "\n"  # fmt: skip
