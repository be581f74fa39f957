"""Host processes that outlive the command that started them, stopped by PID.

`make cluster-up` returns while the node keeps running; `make cluster-down`
is another process. The PIDs go to a JSON file together with each process's
executable, so that a recycled PID is never signalled by mistake.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from dbbench_local.ports import free_port

__all__ = [
    "Started",
    "free_port",
    "is_running",
    "load",
    "log_tail",
    "pid_alive",
    "save",
    "start_detached",
    "stop",
    "stop_pid",
]

STOP_TIMEOUT = 20.0


@dataclass(frozen=True)
class Started:
    name: str
    pid: int
    executable: str


def start_detached(
    name: str, argv: Sequence[str], log: Path, env: Mapping[str, str] | None = None
) -> Started:
    """Start ``argv`` in its own session, output to ``log``; the caller may exit."""
    with log.open("ab") as out:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=dict(env) if env is not None else None,
        )
    return Started(name, proc.pid, os.path.realpath(argv[0]))


def is_running(started: Started) -> bool:
    """True if the PID is alive and still runs the executable that was started."""
    try:
        exe = str(Path(f"/proc/{started.pid}/exe").readlink())
    except OSError:
        return False
    # A zombie has no exe link; a deleted binary reads "<path> (deleted)".
    return exe.removesuffix(" (deleted)") == started.executable


def stop(started: Started, timeout: float = STOP_TIMEOUT) -> None:
    """SIGTERM, wait, SIGKILL after ``timeout``; a no-op if it is already gone."""
    if not is_running(started):
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(started.pid, signal.SIGTERM)
    if _wait_gone(started, timeout):
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(started.pid, signal.SIGKILL)
    _wait_gone(started, timeout)


def _wait_gone(started: Started, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        # Reap it if it is our own child (started in this process).
        with contextlib.suppress(ChildProcessError):
            os.waitpid(started.pid, os.WNOHANG)
        if not is_running(started):
            return True
        time.sleep(0.2)
    return False


def save(path: Path, started: Sequence[Started]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps([asdict(s) for s in started], indent=2) + "\n")
    tmp.replace(path)


def load(path: Path) -> list[Started]:
    if not path.exists():
        return []
    return [Started(**item) for item in json.loads(path.read_text())]


# Servers started by tests and tools (MariaDB, mysqld, FerretDB, the control
# plane) are children of the process that stops them: the Popen reaps them.


def log_tail(log: Path, lines: int = 30) -> str:
    """The end of a server's log, for start-up errors."""
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log file)"


def pid_alive(pid: int, process: subprocess.Popen[bytes] | None = None) -> bool:
    if process is not None:
        # poll() also reaps the child so it does not linger as a zombie.
        return process.poll() is None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def stop_pid(
    pid: int, process: subprocess.Popen[bytes] | None, timeout: float, poll: float = 0.1
) -> None:
    """SIGTERM by PID, wait, SIGKILL after ``timeout``; a no-op if it is already gone."""
    if not pid_alive(pid, process):
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while pid_alive(pid, process) and time.monotonic() < deadline:
        time.sleep(poll)
    if pid_alive(pid, process):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        if process is not None:
            process.wait(timeout=timeout)
