"""What the results service accepts: its limits and the refusals that name them.

One run must not be able to fill the claim and fail every other run's uploads,
and one slow or stuck client must not hold the service. Each limit here is a
chart value; each refusal says which value and what to do (docs/results.md):

    results.maxUploadMB     one file                            413
    results.runQuotaMB      all files of one run                413 (final: retrying cannot help)
    results.minFreeMB       free space the claim must keep      507 (retried: space can be freed)
    results.workers/queue   requests served / waiting at once   503 + Retry-After
    results.requestTimeoutSeconds, results.minUploadKiBPerSecond
                            how long one request may take       connection closed

The quota bookkeeping is per run, in memory, built from the run's directory
the first time the run is seen after a start (so a restarted service counts
what is already on the claim).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path

MIB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    max_upload_bytes: int = 512 * MIB
    run_quota_bytes: int = 2048 * MIB
    min_free_bytes: int = 256 * MIB
    workers: int = 16
    queue: int = 64
    # Headers must arrive, and a connection may sit idle, this long.
    request_timeout_s: float = 30.0
    # A body (up or down) must move at least this fast: a 512 MiB file at the
    # default 256 KiB/s may take 34 minutes, a stalled one is cut after the timeout.
    min_rate_bytes_s: int = 256 * 1024

    def transfer_seconds(self, length: int) -> float:
        """How long a body of `length` bytes may take, headers' timeout included."""
        return self.request_timeout_s + length / self.min_rate_bytes_s


class RefusedError(Exception):
    """A request the service will not serve: status, message and the limit it hit."""

    def __init__(self, status: HTTPStatus, message: str, limit: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.limit = limit

    def body(self) -> dict[str, str]:
        return {"error": str(self)} | ({"limit": self.limit} if self.limit else {})


def _mib(size: int) -> str:
    return f"{size / MIB:,.1f} MiB ({size:,} bytes)"


def check_size(length: int, limits: Limits) -> None:
    if length > limits.max_upload_bytes:
        raise RefusedError(
            HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
            f"this file is {_mib(length)}, above the largest file the service accepts "
            f"({_mib(limits.max_upload_bytes)}, results.maxUploadMB): raise results.maxUploadMB "
            "in the chart's values",
            "results.maxUploadMB",
        )


def check_free_space(free: int, length: int, limits: Limits) -> None:
    """Refuse an upload that would leave the claim with less than the reserve (pure)."""
    if free - length < limits.min_free_bytes:
        raise RefusedError(
            HTTPStatus.INSUFFICIENT_STORAGE,
            f"the results claim has {_mib(free)} free; storing {_mib(length)} would leave less "
            f"than the {_mib(limits.min_free_bytes)} it keeps free (results.minFreeMB): delete "
            "old runs' results from the claim or grow it (results.size)",
            "results.minFreeMB",
        )


def free_bytes(path: Path) -> int:
    stat = os.statvfs(path)
    return stat.f_bavail * stat.f_frsize


def tree_size(path: Path) -> int:
    """Bytes of every regular file under `path` (0 when it does not exist)."""
    total = 0
    for parent, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(parent, name)).st_size  # noqa: PTH118 - os.walk's str
            except FileNotFoundError:  # a temporary file renamed meanwhile
                continue
    return total


@dataclass
class _Usage:
    stored: int
    reserved: int = 0


@dataclass
class Quotas:
    """Bytes per run: stored on the claim plus reserved by uploads under way."""

    limits: Limits
    _runs: dict[Path, _Usage] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def reserve(self, run_dir: Path, run: str, length: int, replaced: int) -> None:
        """Count `length` bytes against the run, or refuse; `replaced` is the size of the
        file the upload overwrites (an upload retried after a restart costs nothing)."""
        with self._lock:
            usage = self._runs.get(run_dir)
            if usage is None:
                usage = self._runs[run_dir] = _Usage(tree_size(run_dir))
            after = usage.stored + usage.reserved + length - replaced
            if after > self.limits.run_quota_bytes:
                raise RefusedError(
                    HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                    f"run {run} holds {_mib(usage.stored + usage.reserved)}; this "
                    f"{_mib(length)} file would exceed its quota of "
                    f"{_mib(self.limits.run_quota_bytes)} (results.runQuotaMB): raise "
                    "results.runQuotaMB, or record less (fewer pods, steps or series)",
                    "results.runQuotaMB",
                )
            usage.reserved += length

    def settle(self, run_dir: Path, length: int, *, stored: int, replaced: int) -> None:
        """The upload ended: drop its reservation and count what it stored."""
        with self._lock:
            usage = self._runs[run_dir]
            usage.reserved -= length
            usage.stored += stored - (replaced if stored else 0)

    def forget(self, run_dir: Path) -> None:
        """Re-count from disk next time (after a merge wrote files of its own)."""
        with self._lock:
            usage = self._runs.get(run_dir)
            if usage is not None and usage.reserved == 0:
                del self._runs[run_dir]
