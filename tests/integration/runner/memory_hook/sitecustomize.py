"""Loaded by every Python process of a runner started with this folder first on
PYTHONPATH (tests/integration/runner/test_runner_memory_mariadb.py): when
DBBENCH_TEST_PEAKS names a folder, the process traces its allocations and, at
exit, writes there `<role> <tracemalloc peak bytes> <peak RSS KiB>` in a file
named by its PID. Roles: "worker" (a multiprocessing child), "main" (any other)."""

from __future__ import annotations

import atexit
import multiprocessing
import os
import tracemalloc
from multiprocessing import util
from pathlib import Path

_FOLDER = os.environ.get("DBBENCH_TEST_PEAKS")


def _report(folder: Path) -> None:
    status = Path("/proc/self/status").read_text().splitlines()
    rss_kib = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    role = "worker" if multiprocessing.parent_process() is not None else "main"
    peak = tracemalloc.get_traced_memory()[1]
    (folder / str(os.getpid())).write_text(f"{role} {peak} {rss_kib}\n")


def _report_at_worker_exit(folder: Path) -> None:
    """A worker forked by multiprocessing's fork server ends with os._exit, which
    skips atexit: it reports from multiprocessing's own exit hook instead."""
    util.register_after_fork(
        _report, lambda _: util.Finalize(None, _report, args=(folder,), exitpriority=0)
    )


if _FOLDER:
    tracemalloc.start()
    atexit.register(_report, Path(_FOLDER))
    _report_at_worker_exit(Path(_FOLDER))
