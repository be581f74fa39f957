"""How the suite sizes the examples it runs: what each test checks (counts,
groups, restarts, the report) holds at any length and size, and the node's two
cores are shared. `make reproduce` runs the examples as written."""

from __future__ import annotations

from typing import Any

# Benchmark 5's examples (news CRUD) run at a quarter of their size. As written
# each repeat is 20,000 single-row inserts and 10,000 reads and 10,000 updates
# on one connection: the tags-index example, three repeats alone on the node
# (`news_once`), was the alone phase's longest run (198 s), its twin the
# concurrent phase's largest single-connection run.
NEWS_DIVISOR = 4


def timed_at(phases: list[dict[str, Any]], duration: str) -> list[dict[str, Any]]:
    """The phases with every timed one (`duration`) lasting `duration` instead."""
    return [{**p, "duration": duration} if "duration" in p else p for p in phases]


def divided(spec: dict[str, Any], divisor: int) -> dict[str, Any]:
    """The spec with its data set's records and every counted phase's operations
    divided by `divisor` (timed phases unchanged)."""
    phases = [{**p, "operations": p["operations"] // divisor} if "operations" in p else p
              for p in spec["phases"]]  # fmt: skip
    dataset = {**spec["dataset"], "records": spec["dataset"]["records"] // divisor}
    return {**spec, "dataset": dataset, "phases": phases}
