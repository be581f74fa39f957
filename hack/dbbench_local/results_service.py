"""The results service as a local process (tests and the operator run out of cluster).

Started with the same module the chart runs (``python -m dbbench_results``),
on a loopback port it binds itself (port 0, so no other process can take it
first; read back from the line the service logs once it listens: polling
/proc/<pid>/net/tcp for it cost a second of CPU per start on a busy machine),
and stopped by its PID.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dbbench_local.ports import log_size

START_TIMEOUT_S = 20.0
# `python -m dbbench_results` logs this once its socket listens (see its main()).
_SERVING = re.compile(rb" INFO serving .* on 127\.0\.0\.1:(\d+), ")


@dataclass
class ResultsService:
    root: Path
    key: bytes
    log: Path
    port: int = 0  # 0: the service binds a free one, found once it listens
    max_upload_mb: int = 512
    # More flags of `python -m dbbench_results` (limits: --run-quota-mb, --workers, ...).
    extra_args: tuple[str, ...] = ()
    # A cgroup v1 directory (e.g. /sys/fs/cgroup/memory/x) the process joins
    # before it starts: a memory limit like the pod's.
    cgroup: Path | None = None
    _process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _log_start: int = field(default=0, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self._process is not None
        return self._process.pid

    def start(self) -> ResultsService:
        key_file = self.root.parent / f".{self.root.name}.key"
        key_file.write_bytes(self.key)
        key_file.chmod(0o600)
        self._log_start = log_size(self.log)  # the log is appended to by each start
        with self.log.open("ab") as out:
            self._process = subprocess.Popen(
                [
                    *self._in_cgroup(),
                    sys.executable, "-m", "dbbench_results", "--root", str(self.root),
                    "--key-file", str(key_file), "--host", "127.0.0.1",
                    "--port", str(self.port), "--max-upload-mb", str(self.max_upload_mb),
                    *self.extra_args,
                ],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            )  # fmt: skip
        try:
            self._wait_ready()
        except BaseException:
            self.stop(kill=True)  # never leave a half-started service behind
            raise
        return self

    def _in_cgroup(self) -> list[str]:
        """A prefix that moves the process into the cgroup, then execs the service
        (same PID): it starts inside the limit."""
        if self.cgroup is None:
            return []
        return ["/bin/sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', str(self.cgroup)]

    def _logged_port(self) -> int:
        """The API's port from this start's "serving" line, 0 until it is logged."""
        with self.log.open("rb") as log:
            log.seek(self._log_start)
            found = _SERVING.search(log.read())
        return int(found.group(1)) if found else 0

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            assert self._process is not None
            if self._process.poll() is not None:
                raise RuntimeError(f"results service exited: {self.log.read_text()[-2000:]}")
            if not self.port:
                self.port = self._logged_port()
                if not self.port:
                    time.sleep(0.05)
                    continue
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(f"{self.url}/healthz", timeout=1) as response,
            ):
                if response.status == 200:
                    return
            time.sleep(0.1)
        raise RuntimeError(f"results service not ready after {START_TIMEOUT_S}s")

    def stop(self, *, kill: bool = False) -> None:
        """SIGTERM (or SIGKILL, to test durability) by PID, and wait."""
        if self._process is None or self._process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(self._process.pid, signal.SIGKILL if kill else signal.SIGTERM)
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(timeout=10)


def start_results_service(
    workdir: Path,
    *,
    max_upload_mb: int = 512,
    extra_args: tuple[str, ...] = (),
    root: Path | None = None,
    cgroup: Path | None = None,
) -> ResultsService:
    root = root or workdir / "results"
    root.mkdir(parents=True, exist_ok=True)
    service = ResultsService(
        root=root,
        key=secrets.token_hex(32).encode(),
        log=workdir / "results-service.log",
        max_upload_mb=max_upload_mb,
        extra_args=extra_args,
        cgroup=cgroup,
    )
    return service.start()


@contextlib.contextmanager
def running_results_service(workdir: Path, **kwargs: Any) -> Iterator[ResultsService]:
    service = start_results_service(workdir, **kwargs)
    try:
        yield service
    finally:
        service.stop()
