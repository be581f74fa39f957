"""A step's pods, merged exactly, and their progress added up.

A step lives at ``<target>/<phase>/<repeat>/`` in the run's directory: each
runner pod uploads into ``pod-<i>/`` (``summary.json`` last, so its presence
means the pod's files are complete) and the merge writes the combined files
(HDR histograms added bucket by bucket) next to them.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from pathlib import Path

from pydantic import ValidationError

from dbbench_contract.layout import PROGRESS, SUMMARY
from dbbench_contract.layout import pod_dir as pod_name
from dbbench_contract.progress import PodProgress, StepProgress, add_up
from dbbench_contract.summary import StepSummary
from dbbench_results.store import fsync_tree
from dbbench_runner.merge import merge

_locks: defaultdict[Path, threading.Lock] = defaultdict(threading.Lock)
_locks_guard = threading.Lock()


class StepIncompleteError(ValueError):
    """A pod of the step has not uploaded its results (yet)."""


def pod_dir(step: Path, index: int) -> Path:
    return step / pod_name(index)


def merge_step(step: Path, pods: int) -> StepSummary:
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


def _report(path: Path) -> PodProgress | None:
    try:
        return PodProgress.from_json(path.read_bytes())
    except (OSError, ValidationError):
        return None


def step_progress(step: Path, pods: int) -> StepProgress:
    """The pods' latest progress added up (operations, records, errors, rates), slowest ETA."""
    reports = [r for i in range(pods) if (r := _report(pod_dir(step, i) / PROGRESS)) is not None]
    finished = sum((pod_dir(step, i) / SUMMARY).is_file() for i in range(pods))
    return add_up(pods, reports, finished)
