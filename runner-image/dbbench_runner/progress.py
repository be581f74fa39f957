"""The progress line on stdout and the small machine-readable progress file."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class ProgressReport:
    phase: str
    operations: int
    errors: int
    rate: float
    records: int  # written and measured (insert and mix phases)
    records_per_second: float
    p99_ms: float
    percent: float | None
    eta_seconds: float | None
    elapsed_seconds: float

    def line(self) -> str:
        percent = "  ?  " if self.percent is None else f"{self.percent:5.1f}%"
        eta = "?" if self.eta_seconds is None else f"{self.eta_seconds:.0f}s"
        records = (
            f"{self.records} records  {self.records_per_second:,.0f} records/s  "
            if self.records
            else ""
        )
        return (
            f"[{self.phase}] {self.operations} ops  {self.rate:,.0f} ops/s  {records}"
            f"p99 {self.p99_ms:.2f} ms  {percent}  ETA {eta}  errors {self.errors}"
        )

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def expected_operations(
    phase_type: str, records: int, batch: int, operations: int | None, keys: int | None
) -> int | None:
    """Operations this pod set will perform in total, when known up front."""
    if phase_type == "insert":
        return None if records <= 0 else -(-records // batch)
    if phase_type == "pointReads" and keys is not None:
        return min(keys, records)
    return operations


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
) -> ProgressReport:
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
    return ProgressReport(
        phase, operations, errors, rate, records, records_rate, p99_ms, percent, eta, elapsed
    )
