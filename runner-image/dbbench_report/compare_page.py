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
    for index, _ in enumerate(names):  # short headers: the legend above names the runs
        headers += [f"#{index + 1} ops/s", f"#{index + 1} p99 ms"]
        if index:
            headers += [
                f"#{index + 1} Δops/s %",
                f"#{index + 1} Δp99 %",
                f"#{index + 1} ops/s noise",
            ]
    body = []
    for r in rows:
        cells = [text(r.target), text(r.phase), text(r.workload.label())]
        for index, (name, cell) in enumerate(zip(names, r.cells, strict=True)):
            cells += [
                num(f"throughput.{name}", None if cell is None else cell.throughput.mean),
                num(f"p99.{name}", None if cell is None else cell.p99.mean, 3),
            ]
            if index:
                cells += [num(f"vsFirst.{name}", r.relative(index), 1),
                          num(f"p99VsFirst.{name}", r.relative(index, "p99"), 1),
                          text(r.noise(index), f"noise.{name}")]  # fmt: skip
        body.append(row(cells, {"target": r.target, "workload": r.workload.label()}))
    legend = ", ".join(f"#{i + 1} {escape(n)}" for i, n in enumerate(names))
    note = f"<p>Runs: {legend}; Δ: relative to #1.</p>"
    return note + table("compare", headers, body)


def _charts(runs: Sequence[Run], rows: Sequence[Row]) -> str:
    """Throughput and p99 of every (target, workload), one bar per run, the
    repeats' range as error bars."""
    groups = [f"{r.target}\n{r.phase}" for r in rows]
    parts = []
    for figure, ylabel in (("throughput", "ops/s"), ("p99", "p99 (ms)")):
        bars = {}
        for index, name in enumerate(labels(runs)):
            spreads = [None if r.cells[index] is None else getattr(r.cells[index], figure)
                       for r in rows]  # fmt: skip
            bars[name] = [(0.0, 0.0, 0.0) if s is None else (s.mean, s.low, s.high)
                          for s in spreads]  # fmt: skip
        title = f"{ylabel} per target and phase, run by run (mean, repeats' range)"
        svg = plots.bar_chart_spread(title, groups, bars, ylabel=ylabel)
        parts.append(chart(f"compare-{figure}", title, svg, len(runs)))
    return f'<div class="charts">{"".join(parts)}</div>'


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
        "<p>Steps line up by what they did (type, idMode, batch size, write concern, the "
        "workload's parameters, warm-up, runner pods and threads, data set), never by their "
        "phases' names: a step no other run did the same way has a row of its own. "
        "Figures are means over "
        "repeats from the merged step summaries; <i>noise</i>: the repeats of the two runs "
        "overlap (min..max), so the difference is not shown to be real.</p>"
    )
    body = section(
        "compare", "Runs side by side", intro + _charts(runs, rows) + _main_table(runs, rows)
    )
    found = _modes(runs, rows)
    if found:
        body += section("modes", "Modes of one workload, ranked", found)
    return page(f"dbbench compare: {', '.join(labels(runs))}", "", body)
