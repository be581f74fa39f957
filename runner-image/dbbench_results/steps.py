"""A step's pods, merged exactly, and their progress added up.

A step lives at ``<target>/<phase>/<repeat>/`` in the run's directory: each
runner pod uploads into ``pod-<i>/`` (``summary.json`` last, so its presence
means the pod's files are complete) and the merge writes the combined files
(HDR histograms added bucket by bucket) next to them.
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from pathlib import Path
from typing import Any

from dbbench_results.store import fsync_tree
from dbbench_runner.merge import merge

SUMMARY = "summary.json"
PROGRESS = "progress.json"
_locks: defaultdict[Path, threading.Lock] = defaultdict(threading.Lock)
_locks_guard = threading.Lock()


class StepIncompleteError(ValueError):
    """A pod of the step has not uploaded its results (yet)."""


def pod_dir(step: Path, index: int) -> Path:
    return step / f"pod-{index}"


def merge_step(step: Path, pods: int) -> dict[str, Any]:
    """Merge pod-0..pod-(pods-1) into the step directory; returns the merged summary.

    Idempotent: merging again gives the same files, so a retried request (an
    operator that restarted before recording the result) is harmless.
    """
    missing = [i for i in range(pods) if not (pod_dir(step, i) / SUMMARY).is_file()]
    if missing:
        raise StepIncompleteError(
            f"pods {', '.join(map(str, missing))} of {pods} have not uploaded summary.json"
        )
    with _locks_guard:
        lock = _locks[step]
    with lock:
        summary = merge(step, [pod_dir(step, i) for i in range(pods)])
        fsync_tree(step)
    return summary


def step_progress(step: Path, pods: int) -> dict[str, Any]:
    """The pods' latest progress added up (operations, records, errors, rates), slowest ETA."""
    reports: dict[int, dict[str, Any]] = {}
    for i in range(pods):
        path = pod_dir(step, i) / PROGRESS
        try:
            reports[i] = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
    percents = [r.get("percent") for r in reports.values()]
    etas = [float(r["eta_seconds"]) for r in reports.values() if r.get("eta_seconds") is not None]
    known = [p for p in percents if p is not None]
    return {
        "pods": pods,
        "reporting": len(reports),
        "finished": sum((pod_dir(step, i) / SUMMARY).is_file() for i in range(pods)),
        "operations": sum(int(r.get("operations", 0)) for r in reports.values()),
        "errors": sum(int(r.get("errors", 0)) for r in reports.values()),
        "rate": sum(float(r.get("rate", 0.0)) for r in reports.values()),
        "records": sum(int(r.get("records", 0)) for r in reports.values()),
        "recordsPerSecond": sum(float(r.get("records_per_second", 0.0)) for r in reports.values()),
        # Pods share the work evenly, so the step's percent is their mean;
        # pods that have not reported yet count as 0.
        "percent": (sum(known) / pods) if known else None,
        "etaSeconds": max(etas) if etas else None,
    }
