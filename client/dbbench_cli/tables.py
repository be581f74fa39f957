"""Plain-text tables of runs and their status, and of a series' history (pure)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from dbbench_cli.kube import Run
from dbbench_contract.history import ChangePoint, SeriesHistory, SeriesPoint
from dbbench_contract.run_summary import not_found_cell


def render(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    return "\n".join("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip()
                     for r in rows) + "\n"  # fmt: skip


def age(created: str | None, now: datetime) -> str:
    if not created:
        return "-"
    seconds = int((now - datetime.fromisoformat(created.replace("Z", "+00:00"))).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{max(seconds, 0)}s"


def runs_table(runs: Sequence[Run], now: datetime | None = None) -> str:
    now = now or datetime.now(UTC)
    rows = [["NAMESPACE", "NAME", "PHASE", "TARGETS", "PROGRESS", "AGE"]]
    for run in runs:
        progress = run.status.progress.percent if run.status.progress else None
        rows.append([
            run.namespace, run.name, run.phase,
            ",".join(t.name for t in run.spec.targets) if run.spec else "",
            "-" if progress is None else f"{progress}%",
            age(run.created, now),
        ])  # fmt: skip
    return render(rows)


def _num(value: Any, digits: int) -> str:
    return "-" if value is None else f"{float(value):,.{digits}f}"


def run_table(run: Run) -> str:
    """`dbbench get`: the run's state, then one line per target, phase and repeat."""
    head = [
        f"Run:       {run.namespace}/{run.name}",
        f"Run phase: {run.phase}",
        f"Results:   {run.status.results_path or '-'}",
    ]
    rows = [["TARGET", "PHASE", "REPEAT", "STATUS", "OPERATIONS", "NOT FOUND", "OPS/S", "P50 MS",
             "P99 MS", "MAX MS"]]  # fmt: skip
    for target in run.status.targets:
        for result in target.phases:
            latency = result.latency_ms
            rows.append([
                target.name, result.name, str(result.repeat), result.status or "",
                f"{result.operations:,}", not_found_cell(result), _num(result.throughput, 1),
                _num(latency and latency.p50, 3), _num(latency and latency.p99, 3),
                _num(latency and latency.max, 3),
            ])  # fmt: skip
    table = render(rows) if len(rows) > 1 else "(no results yet)\n"
    return "\n".join(head) + "\n\n" + table


def _change_cell(changes: Sequence[ChangePoint]) -> str:
    return "; ".join(f"{c.direction} {c.metric} {c.before:.4g}->{c.after:.4g}" for c in changes)


def history_table(history: SeriesHistory) -> str:
    """`dbbench history`: one row per run, target, phase and operation type (a run's
    repeats averaged), the change points starting there, and the newest verdict."""
    groups: dict[tuple[str, str, str, str], list[SeriesPoint]] = {}
    for point in history.points:  # in run order
        groups.setdefault((point.uid, point.target, point.phase, point.operation_type),
                          []).append(point)  # fmt: skip
    marks: dict[tuple[str, str, str, str], list[ChangePoint]] = {}
    for change in history.change_points:
        key = (change.uid, change.target, change.phase, change.operation_type)
        marks.setdefault(key, []).append(change)
    rows = [["RUN", "ENDED", "TARGET", "PHASE", "OP TYPE", "REPEATS", "OPS/S", "P99 MS", "CHANGE"]]
    for key, points in groups.items():
        first = points[0]
        ops = sum(p.ops_per_second for p in points) / len(points)
        p99 = sum(p.p99_ms for p in points) / len(points)
        rows.append([
            first.run, first.ended_at, first.target, first.phase, first.operation_type,
            str(len(points)), f"{ops:,.1f}", f"{p99:.3f}", _change_cell(marks.get(key, [])),
        ])  # fmt: skip
    head = (f"series {history.namespace}/{history.series}: {history.runs} runs, "
            f"{len(history.change_points)} change points (significance "
            f"{history.significance:g}, judged from {history.min_runs} runs)\n")  # fmt: skip
    if len(rows) == 1:
        return head + "no runs of this series are indexed (label runs dbbench.io/series=NAME)\n"
    verdict = history.verdict
    tail = (
        ""
        if verdict is None
        else (f"newest run {verdict.run}: {verdict.reason}: {verdict.message}\n")
    )
    return head + render(rows) + tail
