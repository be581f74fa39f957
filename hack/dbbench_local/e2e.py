"""`make e2e`: the end-to-end suite in two phases against the one local cluster.

1. **concurrent**: every test not marked `disruptive`, on `workers` pytest-xdist
   workers (`--dist loadgroup`: a module's shared runs stay on one worker). Their
   runs share the node (`hardware.exclusive: false`) and each worker keeps to its
   share of it (tests/e2e/sharing.py);
2. **alone**: the tests marked `disruptive` (the API server frozen, the operator
   or the results service killed, the operator restarted by a helm upgrade, an
   exclusive node pool), in one process, when nothing else runs.

The second phase runs whatever the first's outcome; the exit status is the first
failing phase's (pytest's 5, nothing selected, counts as a failure only when
neither phase selected anything: `PYTEST_ARGS="-k x"` picks tests of one phase).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

CONCURRENT = "e2e and not disruptive"
ALONE = "e2e and disruptive"
NOTHING_SELECTED = 5  # pytest's exit status when no test was selected
SUITE = "tests/e2e"
# Every test's setup, call and teardown times in the log: what the lead and CI
# compare between runs.
REPORTING = ("-v", "--durations=0")


@dataclass(frozen=True)
class Phase:
    name: str
    command: list[str]


# pytest options whose value is the next argument (a -k expression may look like a path).
_TAKES_A_VALUE = frozenset({
    "-k", "-m", "-p", "-o", "-n", "-c", "--deselect", "--ignore", "--durations", "--timeout",
    "--maxfail", "--basetemp", "--rootdir",
})  # fmt: skip


def _name_tests(args: Sequence[str]) -> bool:
    """Whether `args` hold a path (or node id) of tests, not only options and values."""
    values = {i + 1 for i, arg in enumerate(args) if arg in _TAKES_A_VALUE}
    return any(
        i not in values and not arg.startswith("-") and Path(arg.split("::", 1)[0]).exists()
        for i, arg in enumerate(args)
    )


def phases(python: str, workers: int, args: Sequence[str]) -> list[Phase]:
    """The two pytest command lines; `args` (PYTEST_ARGS) go to both, and name the
    tests instead of the whole suite when they hold paths."""
    chosen = [] if _name_tests(args) else [SUITE]
    pytest = [python, "-m", "pytest", *REPORTING]
    # The units in the order tests/e2e/ordering.py gives them (longest first), not
    # xdist's (the units with the most tests first).
    spread = (["-n", str(workers), "--dist", "loadgroup", "--no-loadscope-reorder"]
              if workers > 1 else ["-n", "0"])  # fmt: skip
    return [
        Phase("concurrent", [*pytest, "-m", CONCURRENT, *spread, *chosen, *args]),
        Phase("alone", [*pytest, "-m", ALONE, "-n", "0", *chosen, *args]),
    ]


def outcome(statuses: Sequence[int]) -> int:
    """0 when every phase passed or selected nothing (but not all selected nothing)."""
    ran = [s for s in statuses if s != NOTHING_SELECTED]
    if not ran:
        return NOTHING_SELECTED
    return next((s for s in ran if s != 0), 0)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)  # PYTEST_ARGS, split by make's shell
    workers = int(os.environ.get("E2E_WORKERS", "4"))
    statuses = []
    timings = []
    for phase in phases(sys.executable, workers, args):
        print(f"\n=== make e2e, {phase.name} phase: {shlex.join(phase.command)}", flush=True)
        started = time.monotonic()
        status = subprocess.run(phase.command, check=False).returncode
        took = time.monotonic() - started
        load = " ".join(f"{x:.1f}" for x in os.getloadavg())
        line = f"{phase.name} phase: exit {status} in {took / 60:.1f} min (load average {load})"
        print(f"=== make e2e, {line}", flush=True)
        statuses.append(status)
        timings.append(line)
    print("=== make e2e: " + "; ".join(timings), flush=True)
    return outcome(statuses)


if __name__ == "__main__":
    raise SystemExit(main())
