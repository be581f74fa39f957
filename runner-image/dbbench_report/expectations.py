"""The report's Expectations section (pure): each bound of spec.expectations as the
operator judged it when the run's last step was collected (the run summary's
`expectations`, the status's `status.expectations`): held, missed or not
judged, the bound, the worst repeat's figure and by how much."""

from __future__ import annotations

from dbbench_contract.api.expectations import describe
from dbbench_report.cells import num, row, table, text
from dbbench_report.reading import Run

KEY = "expectations"
TITLE = "Expectations"
_HEADERS = ["expectation", "target", "phase", "operation", "bound", "verdict", "limit",
            "measured", "unit", "repeat", "by %", "on miss", "detail"]  # fmt: skip


def section_html(run: Run) -> str:
    """The section; empty for a run whose summary records no judged expectation."""
    outcomes = run.summary.expectations
    if not outcomes:
        return ""
    digits = {"ops/s": 1, "ms": 3, "fraction": 5}
    rows = []
    for o in outcomes:
        places = digits[o.unit]
        cells = [
            text(o.expectation, "expectation"), text(o.target, "target"),
            text(o.phase, "phase"), text(o.operation or "all", "operation"),
            text(o.bound, "bound"), text(o.verdict, "verdict"),
            num("limit", o.limit, places), num("measured", o.measured, places),
            text(o.unit, "unit"), text(o.repeat, "repeat"), num("by %", o.by_percent, 1),
            text(o.on_miss, "on miss"), text(describe(o), "detail"),
        ]  # fmt: skip
        attrs = {"expectation": o.expectation, "target": o.target, "bound": o.bound}
        rows.append(row(cells, attrs))
    missed = sum(o.verdict == "Missed" for o in outcomes)
    held = sum(o.verdict == "Held" for o in outcomes)
    unjudged = len(outcomes) - held - missed
    lead = (f"<p>{held} held, {missed} missed, {unjudged} not judged. Every repeat must "
            "hold a bound: the worst repeat is the one measured.</p>")  # fmt: skip
    return (f'<section id="{KEY}" data-section="{KEY}"><h2>{TITLE}</h2>{lead}'
            f"{table(KEY, _HEADERS, rows)}</section>")  # fmt: skip
