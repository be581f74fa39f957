"""Combine N pods' result directories exactly: histograms added, counts summed.

The stability series is re-windowed from all pods' checkpoint marks together
(the same windows one pod would have drawn from the same marks), and each
storage sample counts the records every pod had written by its time.
"""

from __future__ import annotations

import json
from pathlib import Path

from dbbench_runner.client_usage import pods_from_summary
from dbbench_runner.measurement import Measurements
from dbbench_runner.results import (
    ENVIRONMENT,
    SUMMARY,
    RunMeta,
    read_measurements,
    read_storage,
    write_results,
)
from dbbench_runner.series import SeriesUnit
from dbbench_runner.server_counters import windows_of
from dbbench_runner.storage import merged_rows


def merge(out: Path, inputs: list[Path]) -> dict[str, object]:
    if not inputs:
        raise ValueError("merge needs at least one result directory")
    summaries = [json.loads((d / SUMMARY).read_text()) for d in inputs]
    first = summaries[0]
    unit: SeriesUnit = "records" if first["seriesUnit"] == "records" else "operations"
    total = Measurements(checkpoint_every=1, series_unit=unit)
    pods = []
    for directory in inputs:
        measured = read_measurements(directory)
        total.add(measured)
        pods.append((read_storage(directory), measured.checkpoints.marks()))
    storage = merged_rows(pods)
    meta = RunMeta(
        target=first["target"],
        engine=first["engine"],
        phase=first["phase"],
        type=first["type"],
        pods=tuple(sorted(p for s in summaries for p in s["pods"])),
        pod_count=int(first["podCount"]),
        threads=int(first["threads"]),
        started=min(float(s["startedAt"]) for s in summaries),
        ended=max(float(s["endedAt"]) for s in summaries),
        report_every=int(first["reportEvery"]),
        max_error_rate=float(first["maxErrorRate"]),
        server_version=first["serverVersion"],
        series_unit=unit,
        stopped=any(s["status"] == "stopped" for s in summaries),
    )
    environments = [json.loads((d / ENVIRONMENT).read_text()) for d in inputs]
    client = [pod for s in summaries for pod in pods_from_summary(s)]
    counters = [w for s in summaries for w in windows_of(s)]
    return write_results(
        out, meta, total, storage, {"pods": environments}, client=client, counters=counters
    )
