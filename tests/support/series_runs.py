"""Runs of a series on a results claim, as the operator leaves them: step
summaries (the merged ones of tests/data/merge/, their figures scaled per run)
and the run's summary.json written by the operator's own `build_run_summary`.

`factor` scales a run's speed: throughput times it, latencies divided by it,
so a step in the factors is a step in every metric, each in its direction.
With `repeats` > 1 the reads phase runs that often, repeat r at the factor
times (1 - spread) for odd r and (1 + spread) for even r: a range to shade.
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from dbbench_contract.api import parse_spec
from dbbench_contract.api.status import Latency
from dbbench_contract.layout import SUMMARY
from dbbench_contract.run_summary import RunSummary
from dbbench_contract.summary import StepSummary
from dbbench_contract.tokens import run_token
from dbbench_local.results_service import ResultsService
from dbbench_operator.naming import RunRef
from dbbench_operator.specs.plan import plan
from dbbench_operator.specs.runner_job import step_dir
from dbbench_operator.steps.collecting import build_run_summary
from tests.fixtures.results_service import request

DATA = Path(__file__).resolve().parents[1] / "data" / "merge"
SPEC: dict[str, Any] = {
    "targets": [{"name": "db", "engine": "mariadb"}],
    "dataset": {"records": 4000},
    "phases": [
        {"name": "load", "type": "insert", "batchSize": 10},
        {"name": "reads", "type": "pointReads", "duration": "90s"},
    ],
}
START = datetime(2026, 11, 1, tzinfo=UTC)
# The results service's flag for the tests of a series' history, which upload tens
# of runs and open none of their reports (the series page's test opens one, and the
# browser draws it then): drawing each at upload cost about half a second of CPU.
VIEW_REPORTS = ("--reports=view",)
SPREAD = 0.03


def _latency(latency: Latency, factor: float) -> Latency:
    return Latency(
        p50=latency.p50 / factor, p95=latency.p95 / factor, p99=latency.p99 / factor,
        p999=latency.p999 / factor, max=latency.max,
    )  # fmt: skip


def _scaled(summary: StepSummary, factor: float) -> StepSummary:
    types = {
        kind: op.model_copy(update={"throughput": op.throughput * factor,
                                    "latency_ms": _latency(op.latency_ms, factor)})
        for kind, op in summary.operations_by_type.items()
    }  # fmt: skip
    # The pinned load step failed (a w:0 experiment); a series' runs succeed.
    return summary.model_copy(update={
        "status": "succeeded", "reason": None,
        "throughput": summary.throughput * factor,
        "records_per_second": summary.records_per_second * factor,
        "latency_ms": _latency(summary.latency_ms, factor),
        "operations_by_type": types,
    })  # fmt: skip


def write_run(root: Path, namespace: str, series: str | None, index: int, factor: float,
              name: str | None = None, repeats: int = 1) -> RunSummary:  # fmt: skip
    """Run number `index` of the series (ended `index` hours after START), its
    files under `root`; returns its summary."""
    run = RunRef(name=name or f"{series or 'lone'}-{index}", namespace=namespace,
                 uid=f"00000000-0000-4000-8000-{index:012d}", series=series)  # fmt: skip
    spec = parse_spec(SPEC if repeats == 1 else {**SPEC, "repeats": repeats})
    steps = plan(spec)
    sources = {"load": DATA / "load" / SUMMARY, "reads": DATA / "reads" / SUMMARY}
    run_dir = root / namespace / run.name / run.uid
    merged = {}
    for step in steps:
        jitter = 1.0 if repeats == 1 else 1 + SPREAD * (1 if step.repeat % 2 == 0 else -1)
        summary = _scaled(StepSummary.from_json(sources[step.phase].read_bytes()),
                          factor * jitter)  # fmt: skip
        merged[step.index] = summary
        path = run_dir / step_dir(step) / SUMMARY
        # The step's other files (series, histograms, environment) as merged,
        # so the report renders from the run.
        shutil.copytree(sources[step.phase].parent, path.parent)
        path.write_text(json.dumps(summary.to_wire()))
    ended = START + timedelta(hours=index)
    document = build_run_summary(run, spec, steps, merged, started_at=ended - timedelta(minutes=5),
                                 completed_at=ended, status_targets=[])  # fmt: skip
    (run_dir / SUMMARY).write_text(json.dumps(document.to_wire(), indent=1))
    return document


def put_file(service: ResultsService, run: RunRef, run_dir: Path, path: Path) -> None:
    """PUT one of the run's files (`path`, under `run_dir`) as the run's pods do."""
    token = run_token(service.key, run.namespace, run.name, run.uid)
    status, body = request(
        service, "PUT", f"/v1/runs/{run.namespace}/{run.name}/{run.uid}/files/"
        f"{path.relative_to(run_dir)}", body=path.read_bytes(), token=token,
    )  # fmt: skip
    assert status == 201, body


def upload(service: ResultsService, source: Path, namespace: str, index: int,
           factor: float, series: str | None = "nightly", repeats: int = 1) -> Path:  # fmt: skip
    """Write a run of the series under `source`, upload its files (summary.json
    last, as the operator does); the run's directory on the service's claim."""
    summary = write_run(source, namespace, series, index, factor, repeats=repeats)
    run = summary.run
    run_dir = source / run.namespace / run.name / run.uid
    files = sorted(p for p in run_dir.rglob("*") if p.is_file() and p.name != "report.html")
    first = [p for p in files if p != run_dir / "summary.json"]
    for path in [*first, run_dir / "summary.json"]:
        put_file(service, run, run_dir, path)
    return service.root / run.namespace / run.name / run.uid
