"""The concurrent phase's tests, longest first.

`make e2e` spreads the concurrent phase over four workers, and the phase ends
when the last worker does. xdist's loadgroup hands out its units in order, by
default the groups with the most tests first, so a five-minute test alone in
its unit (the schedule test) started among the last and one worker ran on for
minutes after the others (2026-11-29: 848 s for 741 s of work a worker).
`dbbench_local.e2e` turns that reordering off (`--no-loadscope-reorder`) and
this order, measured, is the one the units start in; what is not named keeps
its place after them.
"""

from __future__ import annotations

# Node ids (prefixes) by how long the test or its module's group took in the
# concurrent phase on 2026-11-29 (four workers; seconds, setup + call).
LONGEST_FIRST = (
    "tests/e2e/test_field4.py",  # 331: three targets one after another
    "tests/e2e/test_schedules.py",  # 273: four minute boundaries
    "tests/e2e/test_engines.py",  # 261
    "tests/e2e/test_source_files_on_the_node.py",  # 207
    "tests/e2e/test_growing_data.py",  # 198
    "tests/e2e/test_failures.py::test_a_timeout",  # 182
    "tests/e2e/test_connections.py",  # 159
    "tests/e2e/test_postgresql.py",  # 146
    "tests/e2e/test_runs.py",  # 127
    "tests/e2e/test_failures.py",  # 86-98 each
)


def rank(nodeid: str) -> int:
    """The position of the first entry `nodeid` starts with; unnamed ones after all
    (a stable sort by it keeps their collection order)."""
    return next((i for i, prefix in enumerate(LONGEST_FIRST) if nodeid.startswith(prefix)),
                len(LONGEST_FIRST))  # fmt: skip
