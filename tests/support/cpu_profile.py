"""`pytest --cpu-profile=FILE`: the CPU each test costs, servers included.

`make test` is bound by the machine's CPU, not by any one test's wall time: on
two cores, tests on four workers wait for each other. `--durations` shows wall
times, which load inflates; this plugin writes, per test (setup, call and
teardown together), the CPU seconds spent by the worker process and by every
process below it: the runner processes a test starts (reaped: the worker's
`RUSAGE_CHILDREN`) and the servers its fixtures keep running (alive: their
`/proc/<pid>/stat` times, their reaped children's included). A server started
for a whole session is charged to the tests that make it work.

One tab-separated line per test: CPU seconds, wall seconds, node id. Summing
by file: `sort -t$'\\t' -k3 FILE | awk ...` or docs/testing.md's one-liner.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

_TICKS = os.sysconf("SC_CLK_TCK")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--cpu-profile", metavar="FILE", default=None,
        help="append each test's CPU seconds (worker and every process below it) to FILE",
    )  # fmt: skip


def _descendants_cpu(root: int) -> float:
    """CPU seconds of every live process below `root` (and of their reaped children)."""
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue  # gone meanwhile
        fields = stat[stat.rindex(")") + 2 :].split()
        pid = int(entry.name)
        parents[pid] = int(fields[1])
        times[pid] = sum(int(f) for f in fields[11:15]) / _TICKS  # utime stime cutime cstime
    total = 0.0
    for pid, cpu in times.items():
        ancestor = parents.get(pid, 0)
        while ancestor > 1 and ancestor != root:
            ancestor = parents.get(ancestor, 0)
        if ancestor == root:
            total += cpu
    return total


def _cpu_now() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (
        own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime
        + _descendants_cpu(os.getpid())
    )  # fmt: skip


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    target = item.config.getoption("--cpu-profile")
    if not target:
        yield
        return
    cpu, wall = _cpu_now(), time.monotonic()
    yield
    spent, took = _cpu_now() - cpu, time.monotonic() - wall
    # A fresh clone has no build/: without its directory every worker crashed.
    Path(target).parent.mkdir(parents=True, exist_ok=True)
    with Path(target).open("a", encoding="utf-8") as out:
        out.write(f"{spent:.2f}\t{took:.2f}\t{item.nodeid}\n")
