"""Combine N pods' result directories exactly: histograms added, counts summed.

The stability series is re-windowed from all pods' checkpoint marks together
(the same windows one pod would have drawn from the same marks), and each
storage sample counts the records every pod had written by its time.

Memory does not follow the number of pods: pods are read one at a time and
added in (histograms, per-second counts, error and record counts), and what
the merged files need of every pod is kept small: its summary's few fields
(its environment goes to the merged environment.json as read),
its count of records written at each storage sample's time (not its marks),
and, when its checkpoints.csv is in order (as runners write it), not its marks
either: they are read back from the files in one ordered stream as the merged
checkpoints.csv and series-ops.csv are written (dbbench_runner.mark_files).
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from dbbench_contract.summary import StepSummary
from dbbench_runner.client_usage import PodUsage, pods_from_summary
from dbbench_runner.mark_files import in_order, merged_marks, write_marks
from dbbench_runner.measurement import Checkpoints, Measurements
from dbbench_runner.results import (
    CHECKPOINTS,
    RunMeta,
    read_environment,
    read_measurements,
    read_storage,
    read_summary,
    write_merged_environment,
    write_results,
)
from dbbench_runner.server_counters import CounterWindow, windows_of
from dbbench_runner.storage import MergedStorage


@dataclass
class _Pods:
    """What the merged summary needs of every pod's summary, added up as read."""

    first: StepSummary
    pods: list[int] = field(default_factory=list)
    started: float = float("inf")
    ended: float = float("-inf")
    stopped: bool = False
    client: list[PodUsage] = field(default_factory=list)
    counters: list[CounterWindow | None] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def add(self, summary: StepSummary) -> None:
        self.pods.extend(summary.pods)
        if summary.status == "failed":
            # A pod's own verdict stands in the merge: its error rate, or its share
            # that measured nothing, or its unapplied writes (a pod's count of those
            # can only be too low, never too high: storage.py).
            names = ", ".join(map(str, summary.pods))
            self.failures.append(f"runner pod {names} failed: {summary.reason}")
        self.started = min(self.started, summary.started_at)
        self.ended = max(self.ended, summary.ended_at)
        self.stopped = self.stopped or summary.status == "stopped"
        self.client.extend(pods_from_summary(summary))
        self.counters.extend(windows_of(summary))

    def meta(self) -> RunMeta:
        first = self.first
        return RunMeta(
            target=first.target,
            engine=first.engine,
            phase=first.phase,
            type=first.type,
            pods=tuple(sorted(self.pods)),
            pod_count=first.pod_count,
            threads=first.threads,
            started=self.started,
            ended=self.ended,
            report_every=first.report_every,
            max_error_rate=first.max_error_rate,
            server_version=first.server_version,
            series_unit=first.series_unit,
            stopped=self.stopped,
            verify_applied=first.stored_records is not None,
            writes_records=first.writes_records,
            pod_failures=tuple(self.failures),
            connection_groups=tuple(first.connection_groups.items()),
            records_before=first.records_before,
        )


def merge(out: Path, inputs: list[Path]) -> StepSummary:
    if not inputs:
        raise ValueError("merge needs at least one result directory")
    first = read_summary(inputs[0])
    pods = _Pods(first)
    total = Measurements(checkpoint_every=1, series_unit=first.series_unit)
    # Storage samples are few and all of them go into the merged storage.csv.
    storage = MergedStorage([read_storage(d) for d in inputs])
    mark_files: list[Path] = []
    spill: Path | None = None
    try:
        for directory in inputs:
            pods.add(read_summary(directory))
            measured = read_measurements(directory)
            marks, measured.checkpoints = measured.checkpoints, Checkpoints()
            total.add(measured)
            del measured
            storage.add(zip(marks.times, marks.records, strict=True))
            columns = (marks.times, marks.counts, marks.records, marks.latency_us)
            if in_order(*columns):
                mark_files.append(directory / CHECKPOINTS)
            else:  # not as a runner writes it: a sorted copy to stream from
                if spill is None:
                    spill = Path(tempfile.mkdtemp(prefix=".merge-", dir=_made(out)))
                mark_files.append(spill / f"{len(mark_files)}.csv")
                write_marks(mark_files[-1], marks.marks())
            del marks, columns
        write_merged_environment(out, (read_environment(d) for d in inputs))
        return write_results(
            out, pods.meta(), total, storage.rows(), None,
            client=pods.client, counters=pods.counters, marks=merged_marks(mark_files),
        )  # fmt: skip
    finally:
        if spill is not None:
            shutil.rmtree(spill, ignore_errors=True)


def _made(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    return directory
