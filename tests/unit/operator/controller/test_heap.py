"""Freed heap memory goes back to the system (`controller/heap`), measured in a process of
its own: a worker thread's freed allocations stay in RSS until trimmed."""

from __future__ import annotations

import subprocess
import sys

PROGRAM = """
import threading
from dbbench_operator.controller import heap

def rss_mb():
    with open("/proc/self/status") as status:
        line = next(l for l in status if l.startswith("VmRSS:"))
    return int(line.split()[1]) // 1024

kept = []

def a_pass():  # reads ~100 MB and keeps a fiftieth of it, as a pass keeps a status
    chunks = [bytes(1000) + str(i).encode() for i in range(100_000)]
    kept.extend(chunks[::50])

thread = threading.Thread(target=a_pass)
thread.start()
thread.join()
before = rss_mb()
trimmed = heap.trim()
print(before, rss_mb(), trimmed)
"""


def test_trim_returns_what_a_worker_thread_freed_to_the_system() -> None:
    out = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True,
                         check=True, env={"MALLOC_ARENA_MAX": "2"}).stdout  # fmt: skip
    before, after, trimmed = out.split()
    assert trimmed == "True"  # glibc, as in the operator's image
    assert int(before) - int(after) > 50, (before, after)  # ~90 MB of the ~120 MB go back
