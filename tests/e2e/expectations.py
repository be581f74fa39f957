"""What a finished run's status must show, derived from its spec alone: the
configured operation counts, ordered percentiles, no errors and, after each
insert phase, the exact number of records its table holds.

Pure: the spec and the status in, assertions out (no cluster access), so the
e2e modules share one reading of "the run did what it was told".
"""

from __future__ import annotations

import math
from typing import Any

PERCENTILES = ("p50", "p95", "p99", "p999", "max")


def expected(spec: dict[str, Any], phase: dict[str, Any]) -> tuple[int, int | None]:
    """(operations, records the phase's table holds after it; None for phases
    that write none). 0 operations: a timed phase (checked > 0 only).

    A phase's idMode picks its table (`<table>` or `<table>_serverkey`) and the
    storage sample measures that table only, so only earlier inserts of the same
    idMode count. Records are split evenly between workers in every spec here;
    after a mix phase that inserts, record counts are not predicted (None).
    """
    if phase["type"] != "insert":
        return int(phase.get("operations", 0)), None
    earlier = spec["phases"][: spec["phases"].index(phase)]
    mixed_in = any(p["type"] == "mix" and (p.get("mix") or {}).get("insert") for p in earlier)
    workers = spec["runner"].get("pods", 1) * phase.get("threads", spec["runner"]["threads"])
    batch = phase.get("batchSize", 1)
    table = phase.get("idMode", "client")
    same_table = [
        p for p in earlier if p["type"] == "insert" and p.get("idMode", "client") == table
    ]
    records_before = sum(p.get("operations", spec["dataset"]["records"]) for p in same_table)
    records = phase.get("operations", spec["dataset"]["records"])
    operations = workers * math.ceil(records / workers / batch)
    return operations, None if mixed_in else records_before + records


def check_results(name: str, spec: dict[str, Any], status: dict[str, Any]) -> None:
    """Succeeded, every phase of every target in order, counts as configured."""
    assert status["phase"] == "Succeeded", (name, status.get("message"), status.get("conditions"))
    assert [t["name"] for t in status["targets"]] == [t["name"] for t in spec["targets"]], name
    for target in status["targets"]:
        results = {p["name"]: p for p in target["phases"]}
        assert list(results) == [p["name"] for p in spec["phases"]], (name, target["name"])
        for phase in spec["phases"]:
            check_phase((name, target["name"], phase["name"]), spec, phase, results[phase["name"]])


def check_phase(
    where: tuple[str, ...], spec: dict[str, Any], phase: dict[str, Any], result: dict[str, Any]
) -> None:
    operations, records = expected(spec, phase)
    if "duration" not in phase:
        assert result["operations"] == operations, (where, result)
    assert result["operations"] > 0, (where, result)
    assert result["errors"] == 0, (where, result)
    latency = result["latencyMs"]
    ordered = [latency[k] for k in PERCENTILES]
    assert ordered == sorted(ordered), (where, latency)
    assert ordered[0] > 0, (where, latency)
    if phase["type"] == "insert":
        written = phase.get("operations", spec["dataset"]["records"])
        assert result["records"] == written, (where, result)
    if records is not None:
        # Exact: what the phase's table holds after it, earlier phases included.
        assert result["storage"]["records"] == records, (where, result)
