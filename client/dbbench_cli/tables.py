"""Plain-text tables of runs and their status (pure)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from dbbench_cli.kube import Run
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
