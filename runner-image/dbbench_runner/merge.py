"""Combine N pods' result directories exactly: histograms added, counts summed.

The stability series is re-windowed from all pods' checkpoint marks together
(the same windows one pod would have drawn from the same marks), and each
storage sample counts the records every pod had written by its time.
"""

from __future__ import annotations

from pathlib import Path

from dbbench_contract.environment import MergedEnvironment
from dbbench_contract.summary import StepSummary
from dbbench_runner.client_usage import pods_from_summary
from dbbench_runner.measurement import Measurements
from dbbench_runner.results import (
    RunMeta,
    read_environment,
    read_measurements,
    read_storage,
    read_summary,
    write_results,
)
from dbbench_runner.server_counters import windows_of
from dbbench_runner.storage import merged_rows


def merge(out: Path, inputs: list[Path]) -> StepSummary:
    if not inputs:
        raise ValueError("merge needs at least one result directory")
    summaries = [read_summary(d) for d in inputs]
    first = summaries[0]
    total = Measurements(checkpoint_every=1, series_unit=first.series_unit)
    pods = []
    # One pod read at a time and added in: what is kept per pod is what the
    # merged storage samples need, its samples and the marks that wrote records
    # (a mark writing none changes no pod's written count).
    for directory in inputs:
        measured = read_measurements(directory)
        total.add(measured)
        writes = [mark for mark in measured.checkpoints.marks() if mark[2]]
        pods.append((read_storage(directory), writes))
        del measured
    storage = merged_rows(pods)
    meta = RunMeta(
        target=first.target,
        engine=first.engine,
        phase=first.phase,
        type=first.type,
        pods=tuple(sorted(p for s in summaries for p in s.pods)),
        pod_count=first.pod_count,
        threads=first.threads,
        started=min(s.started_at for s in summaries),
        ended=max(s.ended_at for s in summaries),
        report_every=first.report_every,
        max_error_rate=first.max_error_rate,
        server_version=first.server_version,
        series_unit=first.series_unit,
        stopped=any(s.status == "stopped" for s in summaries),
        verify_applied=first.stored_records is not None,
        writes_records=first.writes_records,
    )
    environments = MergedEnvironment(pods=tuple(read_environment(d) for d in inputs))
    client = [pod for s in summaries for pod in pods_from_summary(s)]
    counters = [w for s in summaries for w in windows_of(s)]
    return write_results(out, meta, total, storage, environments, client=client, counters=counters)
