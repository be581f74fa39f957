"""The results service at size: one step of many runner pods merged, and a run's
summary of 100 steps, through the same HTTP calls the operator makes.

Each pod's files are written by the runner's own code (`write_results`) from a
seeded synthetic load: HDR histograms of two operation kinds, a checkpoint
every 10 operations (the stability series is re-windowed from them at merge),
storage samples and the pod's environment, as a real pod uploads them.
"""

from __future__ import annotations

import json
import random
import shutil
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from dbbench_contract.api import TargetResult, parse_spec
from dbbench_contract.environment import Environment, RunnerPod, TargetInfo
from dbbench_operator.naming import RunRef
from dbbench_operator.settings import OperatorSettings
from dbbench_operator.specs.plan import Step, plan
from dbbench_operator.specs.runner_job import step_dir
from dbbench_operator.steps import collecting, results_service
from dbbench_runner.drivers.base import StorageSample
from dbbench_runner.measurement import Measurements
from dbbench_runner.operations import Status
from dbbench_runner.results import RunMeta, write_results
from dbbench_runner.storage import StorageRow

STARTED = 1_750_000_000.0
OK = Status(ok=True, rows=1)


@dataclass(frozen=True)
class PodLoad:
    """What one synthetic runner pod measured: `operations` over `seconds` (it
    keeps one interval histogram per second and operation kind)."""

    operations: int
    seconds: float


def write_pod(out: Path, step: Step, pods: int, load: PodLoad) -> None:
    """Pod 0's result directory for a step of `pods` pods (a seeded load)."""
    rng = random.Random(pods)
    m = Measurements(checkpoint_every=10)
    for n in range(load.operations):
        kind = "read" if rng.random() < 0.8 else "update"
        latency = int(rng.lognormvariate(6.0, 0.6)) + 50  # ~400 us median, a long tail
        m.record(kind, latency, OK, STARTED + n * load.seconds / load.operations)
    ended = STARTED + load.seconds
    m.flush(ended)
    meta = RunMeta(step.target, "mariadb", step.phase, step.phase_type, (0,), pods, 8,
                   STARTED, ended, 1000, 0.01, "11.8.2-MariaDB", "operations")  # fmt: skip
    sample = StorageSample(10**9, 10**8, 10**6, 10**6)
    storage = [StorageRow(STARTED + t, sample, before=10**6, written=0)
               for t in range(0, int(load.seconds) + 1, 10)]  # fmt: skip
    env = Environment(target=TargetInfo(name=step.target, engine="mariadb"), pod=RunnerPod(index=0))
    write_results(out, meta, m, storage, env)


def clone_pod(src: Path, dst: Path, pod: int) -> None:
    """Pod `pod`'s directory as a copy of another's: the same load, its own index
    (generating 64 pods' loads would take minutes; merging identical ones costs
    the same as different ones: histograms are added bucket by bucket)."""
    shutil.copytree(src, dst)
    summary = json.loads((dst / "summary.json").read_text())
    summary["pods"] = [pod]
    (dst / "summary.json").write_text(json.dumps(summary))
    environment = json.loads((dst / "environment.json").read_text())
    environment["pod"]["index"] = pod
    (dst / "environment.json").write_text(json.dumps(environment))


def upload_pod(settings: OperatorSettings, run: RunRef, step: Step, pod: int, src: Path) -> int:
    """PUT every file of a pod's directory, as the runner does; bytes sent."""
    sent = 0
    for path in sorted(p for p in src.rglob("*") if p.is_file()):
        data = path.read_bytes()
        relative = f"{step_dir(step)}/pod-{pod}/{path.relative_to(src).as_posix()}"
        results_service.put_file(settings, run, relative, data)
        sent += len(data)
    return sent


def rss_mb(pid: int, field: str = "VmHWM") -> float:
    """The process's peak (VmHWM) or current (VmRSS) resident memory."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return 0.0


def reset_peak(pid: int) -> None:
    """Start the process's peak RSS afresh (Linux: 5 > clear_refs)."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


@dataclass(frozen=True)
class MergeFigure:
    pods: int
    upload_mb: float
    merge_s: float
    rss_before_mb: float
    peak_rss_mb: float


def merge_step_of(
    settings: OperatorSettings, service_pid: int, workdir: Path, pods: int, load: PodLoad
) -> MergeFigure:
    """A step of `pods` pods uploaded, then merged: the merge's time and the service's
    resident memory before it and at its peak during it."""
    run = RunRef("scale", "merge", "00000000-scale-merge")
    step = Step(0, "db", "reads", pods, "pointReads")  # one repeat per size
    template = workdir / f"pods{pods}-pod0"
    write_pod(template, step, pods, load)
    sent = upload_pod(settings, run, step, 0, template)
    for pod in range(1, pods):
        src = workdir / f"pods{pods}-pod{pod}"
        clone_pod(template, src, pod)
        sent += upload_pod(settings, run, step, pod, src)
    before = rss_mb(service_pid, "VmRSS")
    reset_peak(service_pid)
    started = time.monotonic()
    results_service.merge_step(settings, run, step_dir(step), pods)
    took = time.monotonic() - started
    return MergeFigure(pods, sent / 2**20, took, before, rss_mb(service_pid))


SUMMARY_SPEC = {
    "targets": [{"name": "db", "engine": "mariadb",
                 "external": {"uriSecretRef": {"name": "s", "key": "uri"}}}],
    "dataset": {"records": 100_000},
    "phases": [{"name": "load", "type": "insert"},
               {"name": "reads", "type": "pointReads", "duration": "1m"}],
    "repeats": 99,
}  # fmt: skip


@dataclass(frozen=True)
class SummaryFigure:
    steps: int
    write_s: float  # the operator's part: read 100 merged summaries, build, upload
    report_s: float  # until the service has rendered report.html
    rss_before_mb: float
    peak_rss_mb: float


def run_summary(
    settings: OperatorSettings, service_pid: int, root: Path, workdir: Path, seconds: float
) -> SummaryFigure:
    """A run of 100 steps (1 load + 99 repeats), each step one pod merged, then the
    run's summary.json written as the operator writes it, and its report rendered."""
    spec = parse_spec(SUMMARY_SPEC)
    steps = plan(spec)
    run = RunRef("scale", "hundred-steps", "00000000-scale-hundred")
    src = workdir / "summary-pod"
    write_pod(src, steps[1], 1, PodLoad(int(seconds) * 100, seconds))
    for step in steps:
        upload_pod(settings, run, step, 0, src)
        results_service.merge_step(settings, run, step_dir(step), 1)
    before = rss_mb(service_pid, "VmRSS")
    reset_peak(service_pid)
    started = time.monotonic()
    failed = collecting.write_run_summary(
        settings, run, spec, steps, started_at=datetime(2026, 1, 1, tzinfo=UTC),
        now=datetime.now(UTC), status_targets=[TargetResult(name="db", endpoint="127.0.0.1:3306")],
    )  # fmt: skip
    if failed is not None:  # a failed step: no summary.json was written, nor a report
        raise RuntimeError(f"the scale run's steps must succeed: {failed[1]}")
    written = time.monotonic()
    report = root / run.namespace / run.name / run.uid / "report.html"
    deadline = written + 300
    while not report.is_file() and time.monotonic() < deadline:
        time.sleep(0.2)
    rendered = time.monotonic() - written
    return SummaryFigure(len(steps), written - started, rendered, before, rss_mb(service_pid))
