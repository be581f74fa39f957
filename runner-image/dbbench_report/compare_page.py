"""compare.html: `dbbench compare --html`, the comparison as a page (pure).

The same rows as the text table, each number cell carrying its exact value,
and for every workload run with several idModes (field benchmark 1's four
insert modes) one table and one bar chart of every (run, target, idMode).
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from dbbench_report import plots
from dbbench_report.cells import num, row, table, text
from dbbench_report.comparing import Row, labels, modes
from dbbench_report.reading import Run
from dbbench_report.rendering import page
from dbbench_report.sections import chart, section


def _main_table(runs: Sequence[Run], rows: Sequence[Row]) -> str:
    names = labels(runs)
    headers = ["target", "phase", "workload"]
    for name in names:
        headers += [f"{name} ops/s", f"{name} p99 (ms)"]
    body = []
    for r in rows:
        cells = [text(r.target), text(r.phase), text(r.workload.label())]
        for name, cell in zip(names, r.cells, strict=True):
            cells += [
                num(f"throughput.{name}", None if cell is None else cell.throughput.mean),
                num(f"p99.{name}", None if cell is None else cell.p99.mean, 3),
            ]
        body.append(row(cells, {"target": r.target, "workload": r.workload.label()}))
    return table("compare", headers, body)


MODES_HEADERS = ["rank", "run target", "phase", "idMode", "ops/s", "vs best", "p99 (ms)"]


def _modes(runs: Sequence[Run], rows: Sequence[Row]) -> str:
    parts = []
    for index, (title, entries) in enumerate(modes(runs, rows).items()):
        best = entries[0].throughput or 1.0
        ranked = [
            row([text(i + 1), text(e.label), text(e.phase), text(e.id_mode, "idMode"),
                 num("throughput", e.throughput), num("vsBest", e.throughput / best, 2),
                 num("p99", e.p99, 3)], {"entry": f"{e.label} {e.id_mode}"})
            for i, e in enumerate(entries)
        ]  # fmt: skip
        bars = {f"{e.label} ({e.id_mode})": [e.throughput] for e in entries}
        svg = plots.bar_chart(f"{title}: every mode", [title], bars, ylabel="ops/s")
        parts.append(
            f"<h3>{escape(title)}</h3>"
            + table(f"modes-{index}", MODES_HEADERS, ranked)
            + chart(f"modes-{index}", f"{title}: every mode", svg, len(bars))
        )
    return "".join(parts)


def compare_page(runs: Sequence[Run], rows: Sequence[Row]) -> str:
    intro = (
        "<p>Steps line up by what they did (type, idMode, batch size, write concern and "
        "the workload's parameters), not by their phases' names. Figures are means over "
        "repeats from the merged step summaries.</p>"
    )
    body = section("compare", "Runs side by side", intro + _main_table(runs, rows))
    found = _modes(runs, rows)
    if found:
        body += section("modes", "Modes of one workload, ranked", found)
    return page(f"dbbench compare: {', '.join(labels(runs))}", "", body)
