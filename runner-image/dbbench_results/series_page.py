"""The results browser's page of one series (pure: its history in, HTML out).

Each metric the index holds over the series' runs (one line per target and
phase, a run's repeats averaged and their range shaded, the change points of
the shown operation type marked), the change points with before -> after,
the runs (each linking to its report, compared with the run before it in one
click, or ticked and compared) and every shown figure in a table. Numbers in
tables carry their exact value in ``data-value`` (dbbench_report.cells), and
every point's tooltip says what it shows.

Links are relative (``../../runs/...``) so the page also works behind the
Kubernetes API server's service proxy, as the run list's do.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from html import escape
from urllib.parse import quote, urlencode

from dbbench_contract.history import ALL_OPERATIONS, ChangePoint, Metric, SeriesHistory
from dbbench_report.cells import num, raw, row, table, text
from dbbench_report.rendering import page
from dbbench_report.sections import chart, section
from dbbench_report.trend import Mark, TrendLine, TrendPoint, trend_chart
from dbbench_results.history.changes import RunValue, metric_series, run_order

# Shown in this order; label, digits.
METRIC_LABELS: dict[Metric, tuple[str, int]] = {
    "opsPerSecond": ("ops/s", 1), "p99Ms": ("p99 (ms)", 3), "p50Ms": ("p50 (ms)", 3),
    "p95Ms": ("p95 (ms)", 3), "p999Ms": ("p99.9 (ms)", 3),
    "recordsPerSecond": ("records/s", 1), "errors": ("errors", 1),
}  # fmt: skip
Line = tuple[str, str]  # target, phase


def fmt(metric: Metric, value: float) -> str:
    return f"{value:,.{METRIC_LABELS[metric][1]}f}"


def report_href(namespace: str, run: str, uid: str) -> str:
    return f"../../runs/{quote(namespace)}/{quote(run)}/{quote(uid)}/"


def compare_href(namespace: str, *runs: tuple[str, str]) -> str:
    return "../../compare?" + urlencode([("run", f"{namespace}/{r}/{u}") for r, u in runs])


def change_pct(change: ChangePoint) -> float | None:
    return None if change.before == 0 else (change.after - change.before) / change.before * 100


def point_tooltip(metric: Metric, value: RunValue, line: Line, repeats: int) -> str:
    label = METRIC_LABELS[metric][0]
    tip = f"{value.run} ({value.ended_at})\n{line[0]} {line[1]}: {label} {fmt(metric, value.mean)}"
    if repeats > 1:
        tip += f"\n{repeats} repeats: {fmt(metric, value.low)} to {fmt(metric, value.high)}"
    return tip


def change_tooltip(change: ChangePoint) -> str:
    label = METRIC_LABELS[change.metric][0]
    pct = change_pct(change)
    return (
        f"{change.direction} at {change.run}: {label} of {change.target} {change.phase} "
        f"({change.operation_type}) {fmt(change.metric, change.before)} -> "
        f"{fmt(change.metric, change.after)}"
        + ("" if pct is None else f" ({pct:+.1f}%)")
        + f", p={change.pvalue:.2g}"
    )


class _View:
    """The series' figures of one operation type, grouped for the page."""

    def __init__(self, history: SeriesHistory, op: str) -> None:
        self.history = history
        self.op = op
        points = [p for p in history.points if p.operation_type == op]
        self.values = metric_series(points)  # (target, phase, op, metric) -> runs
        self.repeats = Counter((p.uid, p.target, p.phase) for p in points)
        self.lines: list[Line] = list(dict.fromkeys((p.target, p.phase) for p in points))
        self.runs = run_order(history.points)
        self.previous = {b.uid: a for a, b in zip(self.runs, self.runs[1:], strict=False)}

    def of(self, line: Line, metric: Metric) -> list[RunValue]:
        return self.values.get((*line, self.op, metric), [])

    def compare_previous(self, uid: str) -> str | None:
        before = self.previous.get(uid)
        if before is None:
            return None
        now = next(r for r in self.runs if r.uid == uid)
        return compare_href(self.history.namespace, (before.run, before.uid), (now.run, now.uid))


def _chart(view: _View, metric: Metric) -> str:
    ns = view.history.namespace
    lines: list[TrendLine] = []
    index: dict[tuple[Line, str], tuple[int, int]] = {}
    for line in view.lines:
        values = view.of(line, metric)
        if not values:
            continue
        points = []
        for j, v in enumerate(values):
            index[(line, v.uid)] = (len(lines), j)
            repeats = view.repeats[(v.uid, *line)]
            points.append(TrendPoint(
                x=datetime.fromisoformat(v.ended_at), mean=v.mean, low=v.low, high=v.high,
                href=report_href(ns, v.run, v.uid),
                tooltip=point_tooltip(metric, v, line, repeats),
                attrs={"run": v.run, "target": line[0], "phase": line[1], "metric": metric},
            ))  # fmt: skip
        lines.append(TrendLine(f"{line[0]} {line[1]}", tuple(points)))
    if not lines:
        return ""
    marks = []
    for change in view.history.change_points:
        at = index.get(((change.target, change.phase), change.uid))
        if change.metric != metric or change.operation_type != view.op or at is None:
            continue
        marks.append(Mark(
            line=at[0], point=at[1], kind="regression" if change.direction == "Regression"
            else "improvement", href=view.compare_previous(change.uid) or "",
            tooltip=change_tooltip(change),
            attrs={"run": change.run, "target": change.target, "phase": change.phase,
                   "metric": metric},
        ))  # fmt: skip
    title = f"{METRIC_LABELS[metric][0]} over the series' runs"
    svg = trend_chart(f"m-{metric.lower()}", title, lines, marks, ms=metric.endswith("Ms"))
    return chart(f"trend-{metric}", title, svg, len(lines))


def _changes(view: _View) -> str:
    ns = view.history.namespace
    rows = []
    for c in view.history.change_points:
        compare = view.compare_previous(c.uid)
        link = "" if compare is None else f'<a href="{escape(compare)}">with the run before</a>'
        digits = METRIC_LABELS[c.metric][1]
        rows.append(row([
            raw(f'<a href="{escape(report_href(ns, c.run, c.uid))}">{escape(c.run)}</a>', "run"),
            text(c.ended_at, "endedAt"), text(c.target, "target"), text(c.phase, "phase"),
            text(c.operation_type, "operationType"), text(c.metric, "metric"),
            raw(f'<b class="{c.direction.lower()}">{c.direction}</b>', "direction"),
            num("before", c.before, digits), num("after", c.after, digits),
            num("changePercent", change_pct(c), 1), text(f"{c.pvalue:.2g}", "pvalue"),
            raw(link, "compare"),
        ], {"run": c.run, "direction": c.direction, "target": c.target, "phase": c.phase,
            "op": c.operation_type, "metric": c.metric}))  # fmt: skip
    if not rows:
        return "<p>No change point in this series.</p>"
    headers = ["starts at run", "ended", "target", "phase", "operation type", "metric",
               "direction", "before", "after", "change %", "p-value", "compare"]  # fmt: skip
    return table("changes", headers, rows)


def _runs(view: _View) -> str:
    ns = view.history.namespace
    starts = Counter(c.uid for c in view.history.change_points)
    rows = []
    for r in reversed(view.runs):  # newest first
        value = escape(f"{ns}/{r.run}/{r.uid}")
        compare = view.compare_previous(r.uid)
        rows.append(row([
            raw(f"<input type='checkbox' name='run' value='{value}'>"),
            raw(f'<a href="{escape(report_href(ns, r.run, r.uid))}">{escape(r.run)}</a>', "run"),
            text(r.ended_at, "endedAt"), num("changePoints", starts[r.uid]),
            raw("" if compare is None else f'<a href="{escape(compare)}">compare</a>', "compare"),
        ], {"run": r.run}))  # fmt: skip
    headers = ["compare", "run", "ended", "change points starting here", "with the run before"]
    return (
        "<form method='get' action='../../compare'>" + table("runs", headers, rows)
        + "<p><button type='submit'>Compare the ticked runs</button> (two or more)</p></form>"
    )  # fmt: skip


def _figures(view: _View) -> str:
    headers = ["run", "target", "phase", "repeats"]
    for label, _ in METRIC_LABELS.values():
        headers += [label, f"{label} min", f"{label} max"]
    rows = []
    for line in view.lines:
        by_metric = {m: {v.uid: v for v in view.of(line, m)} for m in METRIC_LABELS}
        for r in view.runs:
            if r.uid not in by_metric["opsPerSecond"]:
                continue
            cells = [text(r.run, "run"), text(line[0], "target"), text(line[1], "phase"),
                     num("repeats", view.repeats[(r.uid, *line)])]  # fmt: skip
            for metric, (_, digits) in METRIC_LABELS.items():
                v = by_metric[metric].get(r.uid)
                cells += [num(metric, None if v is None else v.mean, digits),
                          num(f"{metric}.min", None if v is None else v.low, digits),
                          num(f"{metric}.max", None if v is None else v.high, digits)]  # fmt: skip
            rows.append(row(cells, {"run": r.run, "target": line[0], "phase": line[1]}))
    return table("figures", headers, rows)


def _op_links(history: SeriesHistory, op: str) -> str:
    links = [
        f"<b>{escape(k)}</b>" if k == op else f'<a href="?{urlencode({"op": k})}">{escape(k)}</a>'
        for k in known_operation_types(history)
    ]
    return f"<p data-key='operationTypes'>Operation type: {' · '.join(links)}</p>"


def _summary(view: _View) -> str:
    h = view.history
    head = (
        f"<p data-key='counts'>{h.runs} runs, {len(h.change_points)} change points "
        f"(significance {h.significance:g}, judged from {h.min_runs} runs). Lines: one per "
        "target and phase, a run's repeats averaged, their range shaded; ▼ a regression, "
        "▲ an improvement (of the shown operation type); a point opens its run's report, a "
        "mark compares its run with the one before.</p>"
    )
    verdict = ""
    if h.verdict is not None:
        v = h.verdict
        verdict = (f"<p data-key='verdict'>Newest run {escape(v.run)}: "
                   f"<b>{escape(v.reason)}</b>: {escape(v.message)}</p>")  # fmt: skip
    return head + verdict + _op_links(h, view.op)


def series_page(history: SeriesHistory, op: str = ALL_OPERATIONS) -> str:
    """The page of `history`, its charts and figures of operation type `op`."""
    title = f"dbbench series: {history.namespace}/{history.series}"
    if not history.points:
        return page(title, "", "<p>No runs of this series are indexed.</p>")
    view = _View(history, op)
    charts = [_chart(view, metric) for metric in METRIC_LABELS]
    parts = [
        ("summary", "Summary", _summary(view)),
        ("trend", f"Each metric over time ({op})",
         f'<div class="charts">{"".join(c for c in charts if c)}</div>'),
        ("changes", "Change points", _changes(view)),
        ("runs", "Runs", _runs(view)),
        ("figures", f"Figures per run, target and phase ({op})", _figures(view)),
    ]  # fmt: skip
    nav = "".join(f'<a href="#{key}">{escape(name)}</a>' for key, name, _ in parts)
    return page(title, nav, "".join(section(k, n, body) for k, n, body in parts))


def known_operation_types(history: SeriesHistory) -> Sequence[str]:
    return list(dict.fromkeys(p.operation_type for p in history.points))
