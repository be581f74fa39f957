"""The progress line on stdout and the small machine-readable progress file."""

from __future__ import annotations

from dbbench_contract.progress import PodProgress


def progress_line(p: PodProgress) -> str:
    percent = "  ?  " if p.percent is None else f"{p.percent:5.1f}%"
    eta = "?" if p.eta_seconds is None else f"{p.eta_seconds:.0f}s"
    records = f"{p.records} records  {p.records_per_second:,.0f} records/s  " if p.records else ""
    return (
        f"[{p.phase}] {p.operations} ops  {p.rate:,.0f} ops/s  {records}"
        f"p99 {p.p99_ms:.2f} ms  {percent}  ETA {eta}  errors {p.errors}"
    )


def report(
    phase: str,
    *,
    operations: int,
    records: int,
    errors: int,
    p99_ms: float,
    elapsed: float,
    expected: int | None,
    duration: float | None,
) -> PodProgress:
    """Percent and ETA from operations when bounded by count, else from time."""
    rate = operations / elapsed if elapsed > 0 else 0.0
    records_rate = records / elapsed if elapsed > 0 else 0.0
    percent: float | None = None
    eta: float | None = None
    if expected:
        percent = min(100.0, 100.0 * operations / expected)
        eta = (expected - operations) / rate if rate > 0 else None
    elif duration:
        percent = min(100.0, 100.0 * elapsed / duration)
        eta = max(0.0, duration - elapsed)
    return PodProgress(
        phase=phase,
        operations=operations,
        errors=errors,
        rate=rate,
        records=records,
        records_per_second=records_rate,
        p99_ms=p99_ms,
        percent=percent,
        eta_seconds=eta,
        elapsed_seconds=elapsed,
    )
