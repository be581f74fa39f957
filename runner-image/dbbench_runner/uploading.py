"""Hand result files and progress to the results service (runner pods in a Job).

The service owns the results claim; pods never mount it. Files are sent from
disk in chunks (never read whole). An upload is retried with back-off until
shortly before the Job's deadline (the step file's `jobDeadline`), so a
results service that restarts, is busy (503 + Retry-After) or is short of
space (507) costs time, not results; an answer that retrying cannot change
(a 4xx: token, path, size, quota) fails at once.
"""

from __future__ import annotations

import logging
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

from dbbench_contract.layout import PROGRESS, SUMMARY, pod_dir

log = logging.getLogger(__name__)

REQUEST_TIMEOUT_S = 30.0
MAX_BACKOFF_S = 20.0
# Without a Job deadline (a step file written by hand), how long uploads are retried.
UPLOAD_BUDGET_S = 600.0
# Stop this long before the deadline: time to write the termination message
# before Kubernetes ends the pod, so the run says why.
DEADLINE_MARGIN_S = 5.0
# 4xx answers that a later attempt can change: a request cut for slowness, rate limits.
RETRIABLE_4XX = (408, 429)


class UploadFailedError(Exception):
    pass


@dataclass(frozen=True)
class Destination:
    """Where this pod's files go: /v1/runs/<run>/files/<step>/pod-<index>/..."""

    url: str  # e.g. http://dbbench-results.dbbench-system.svc:8080
    token: str
    run: str  # <namespace>/<run>/<uid>
    step: str  # <target>/<phase>/<repeat>
    pod: int

    def file_url(self, relative: str) -> str:
        path = f"{self.run}/files/{self.step}/{pod_dir(self.pod)}/{relative}"
        return f"{self.url.rstrip('/')}/v1/runs/{quote(path)}"


def retry_until(deadline: datetime | None, now: float) -> float:
    """The epoch second after which no attempt starts (pure)."""
    if deadline is None:
        return now + UPLOAD_BUDGET_S
    return deadline.timestamp() - DEADLINE_MARGIN_S


def _attempt(destination: Destination, relative: str, source: Path | bytes, timeout: float) -> None:
    headers = {
        "Authorization": f"Bearer {destination.token}",
        "Content-Type": "application/octet-stream",
    }
    url = destination.file_url(relative)
    if isinstance(source, bytes):
        request = urllib.request.Request(url, data=source, method="PUT", headers=headers)  # noqa: S310 - the operator's http(s) Service
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            response.read()
        return
    with source.open("rb") as body:  # streamed: a file can be larger than the pod's memory
        headers["Content-Length"] = str(source.stat().st_size)
        request = urllib.request.Request(url, data=body, method="PUT", headers=headers)  # noqa: S310
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            response.read()


def _try(
    destination: Destination, relative: str, source: Path | bytes, timeout: float
) -> tuple[str, float] | None:
    """One attempt: None when stored; (why, seconds the service asks to wait) when a
    later attempt may work; UploadFailedError when none can."""
    try:
        _attempt(destination, relative, source, timeout)
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode(errors="replace")[:300]
        if 400 <= exc.code < 500 and exc.code not in RETRIABLE_4XX:
            raise UploadFailedError(f"{relative}: HTTP {exc.code}: {detail}") from exc
        retry_after = (exc.headers.get("Retry-After") or "") if exc.headers else ""
        return f"HTTP {exc.code}: {detail}", float(retry_after) if retry_after.isdigit() else 0.0
    except (OSError, urllib.error.URLError) as exc:
        return f"{type(exc).__name__}: {exc}"[:300], 0.0
    return None


def put(
    destination: Destination,
    relative: str,
    source: Path | bytes,
    *,
    deadline: datetime | None = None,
    attempts: int | None = None,
) -> None:
    """Upload one file, retried until `deadline` (or `attempts` tries, for progress)."""
    start = time.time()
    until = retry_until(deadline, start)
    delay = 1.0
    attempt = 0
    while True:
        attempt += 1
        timeout = min(REQUEST_TIMEOUT_S, max(1.0, until - time.time()))
        failed = _try(destination, relative, source, timeout)
        if failed is None:
            if attempt > 1:
                log.info("upload of %s succeeded on attempt %d", relative, attempt)
            return
        reason, asked = failed
        left = until - time.time()
        if (attempts is not None and attempt >= attempts) or left <= 0:
            raise UploadFailedError(
                _gave_up(relative, reason, attempt, start, deadline, attempts=attempts)
            )
        wait = min(max(delay, asked), left)
        log.warning("upload of %s failed (%s); attempt %d, retrying in %.0fs (%.0fs left)",
                    relative, reason, attempt, wait, left)  # fmt: skip
        time.sleep(wait)
        delay = min(delay * 2, MAX_BACKOFF_S)


def _gave_up(
    relative: str,
    reason: str,
    attempt: int,
    start: float,
    deadline: datetime | None,
    *,
    attempts: int | None,
) -> str:
    spent = time.time() - start
    if attempts is not None and attempt >= attempts:
        # Progress is best effort: no deadline or budget was involved.
        return f"{relative}: {reason}; gave up after {attempt} of {attempts} attempts"
    until = (
        f"the Job's deadline ({deadline.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ})"
        if deadline is not None
        else f"the {UPLOAD_BUDGET_S:.0f}s upload budget (no jobDeadline in the step file)"
    )
    return f"{relative}: {reason}; {attempt} attempts over {spent:.0f}s, until {until}"


def upload_results(destination: Destination, out: Path, deadline: datetime | None = None) -> int:
    """Every file under `out`, summary.json last (its presence marks a complete pod)."""
    files = sorted(p for p in out.rglob("*") if p.is_file() and not p.name.startswith("."))
    files.sort(key=lambda p: p.name == SUMMARY)
    for path in files:
        put(destination, path.relative_to(out).as_posix(), path, deadline=deadline)
    return len(files)


class ProgressForwarder:
    """Sends progress.json whenever the runner rewrites it; never fails the run."""

    def __init__(self, destination: Destination, out: Path, every: float) -> None:
        self._destination = destination
        self._path = out / PROGRESS
        self._every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="progress", daemon=True)
        self._sent_mtime = 0.0

    def __enter__(self) -> ProgressForwarder:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=REQUEST_TIMEOUT_S)

    def _loop(self) -> None:
        while not self._stop.wait(self._every):
            self.send_if_changed()

    def send_if_changed(self) -> None:
        try:
            mtime = self._path.stat().st_mtime
        except FileNotFoundError:
            return  # the runner has not written its first progress yet
        except OSError as exc:
            log.warning("progress not sent: %s", exc)
            return
        try:
            if mtime == self._sent_mtime:
                return
            put(self._destination, PROGRESS, self._path.read_bytes(), attempts=1)
            self._sent_mtime = mtime
        except (OSError, UploadFailedError) as exc:
            log.warning("progress not sent: %s", exc)
