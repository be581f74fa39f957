"""Hand result files and progress to the results service (runner pods in a Job).

The service owns the results claim; pods never mount it. Every request is
bounded in time and retried with back-off, so a briefly restarting service
costs a few seconds, and an absent one fails the pod in bounded time.
"""

from __future__ import annotations

import logging
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from dbbench_contract.layout import PROGRESS, SUMMARY, pod_dir

log = logging.getLogger(__name__)

REQUEST_TIMEOUT_S = 30.0
RETRIES = 8
MAX_BACKOFF_S = 20.0


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


def put(destination: Destination, relative: str, data: bytes, retries: int = RETRIES) -> None:
    request = urllib.request.Request(  # noqa: S310 - the URL is the operator's http(s) Service
        destination.file_url(relative),
        data=data,
        method="PUT",
        headers={
            "Authorization": f"Bearer {destination.token}",
            "Content-Type": "application/octet-stream",
        },
    )
    delay = 1.0
    for attempt in range(1, retries + 1):
        try:
            with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as response:  # noqa: S310
                response.read()
                return
        except urllib.error.HTTPError as exc:
            # 4xx will not get better by retrying (token, path, size): fail now.
            if 400 <= exc.code < 500:
                detail = exc.read().decode(errors="replace")[:300]
                raise UploadFailedError(f"{relative}: HTTP {exc.code}: {detail}") from exc
            reason = f"HTTP {exc.code}"
        except (OSError, urllib.error.URLError) as exc:
            reason = type(exc).__name__
        if attempt == retries:
            raise UploadFailedError(f"{relative}: {reason} after {retries} attempts")
        log.warning("upload of %s failed (%s); retrying in %.0fs", relative, reason, delay)
        time.sleep(delay)
        delay = min(delay * 2, MAX_BACKOFF_S)


def upload_results(destination: Destination, out: Path) -> int:
    """Every file under `out`, summary.json last (its presence marks a complete pod)."""
    files = sorted(p for p in out.rglob("*") if p.is_file() and not p.name.startswith("."))
    files.sort(key=lambda p: p.name == SUMMARY)
    for path in files:
        put(destination, path.relative_to(out).as_posix(), path.read_bytes())
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
            if mtime == self._sent_mtime:
                return
            put(self._destination, PROGRESS, self._path.read_bytes(), retries=1)
            self._sent_mtime = mtime
        except (OSError, UploadFailedError) as exc:
            log.warning("progress not sent: %s", exc)
