"""Plain-text tables of runs and their status (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from dbbench_contract.run_summary import StepResult, not_found_cell


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


def runs_table(runs: Sequence[Mapping[str, Any]], now: datetime | None = None) -> str:
    now = now or datetime.now(UTC)
    rows = [["NAMESPACE", "NAME", "PHASE", "TARGETS", "PROGRESS", "AGE"]]
    for run in runs:
        meta, spec, status = run["metadata"], run.get("spec") or {}, run.get("status") or {}
        progress = (status.get("progress") or {}).get("percent")
        rows.append([
            meta.get("namespace", ""), meta["name"], status.get("phase") or "Pending",
            ",".join(t["name"] for t in spec.get("targets") or []),
            "-" if progress is None else f"{progress}%",
            age(meta.get("creationTimestamp"), now),
        ])  # fmt: skip
    return render(rows)


def _num(value: Any, digits: int) -> str:
    return "-" if value is None else f"{float(value):,.{digits}f}"


def run_table(run: Mapping[str, Any]) -> str:
    """`dbbench get`: the run's state, then one line per target, phase and repeat."""
    meta, status = run["metadata"], run.get("status") or {}
    head = [
        f"Run:       {meta.get('namespace')}/{meta['name']}",
        f"Run phase: {status.get('phase') or 'Pending'}",
        f"Results:   {status.get('resultsPath') or '-'}",
    ]
    rows = [["TARGET", "PHASE", "REPEAT", "STATUS", "OPERATIONS", "NOT FOUND", "OPS/S", "P50 MS",
             "P99 MS", "MAX MS"]]  # fmt: skip
    for target in status.get("targets") or []:
        for raw in target.get("phases") or []:
            # The status's phase results have the run summary's StepResult fields.
            result = StepResult.from_wire(raw)
            latency = result.latency_ms
            rows.append([
                target["name"], result.name, str(result.repeat), result.status or "",
                f"{result.operations:,}", not_found_cell(result), _num(result.throughput, 1),
                _num(latency and latency.p50, 3), _num(latency and latency.p99, 3),
                _num(latency and latency.max, 3),
            ])  # fmt: skip
    table = render(rows) if len(rows) > 1 else "(no results yet)\n"
    return "\n".join(head) + "\n\n" + table
