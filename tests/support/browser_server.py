"""The results browser as a real process on a free loopback port, stopped by PID."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_LISTENING = re.compile(r"browsing .* on ([0-9.]+):(\d+)")


@contextmanager
def browser_server(root: Path, log: Path, host: str = "127.0.0.1") -> Iterator[str]:
    """Start `python -m dbbench_results.browser --root ROOT --port 0`; yield its URL.

    Its log goes to a file (a pipe nobody drains would block it once full).
    """
    with log.open("w") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "dbbench_results.browser", "--root", str(root),
             "--host", host, "--port", "0"],
            stdout=sink, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        match = None
        while match is None:
            if process.poll() is not None:
                raise RuntimeError(f"browser exited with {process.returncode}: {log.read_text()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"browser did not start within 30 s: {log.read_text()}")
            time.sleep(0.1)
            match = _LISTENING.search(log.read_text())
        yield f"http://{host}:{match.group(2)}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
