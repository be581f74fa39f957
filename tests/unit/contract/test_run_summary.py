"""The run's summary.json: written from the API's models, read back into them,
and a file of the release before (tests/data/summaries/) still reads."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dbbench_contract.api import BenchmarkRunSpec, PhaseResult, TargetResult, parse_spec
from dbbench_contract.run_summary import RunSummary
from dbbench_contract.summary import StepSummary
from dbbench_operator.naming import RunRef
from dbbench_operator.specs.plan import plan
from dbbench_operator.steps.collecting import Ending, build_run_summary

DATA = Path(__file__).resolve().parents[2] / "data"
PREVIOUS = DATA / "summaries" / "previous-release.json"

# The spec and the steps' merged summaries (tests/data/merge/) the pinned file
# was written from, by the release before issue 33.
SPEC: dict[str, Any] = {
    "targets": [
        {"name": "db", "engine": "mariadb", "settings": {"innodb_buffer_pool_size": "256M"},
         "hardware": {"pricePerHour": 0.5}},
        {"name": "mongo", "engine": "mongodb", "topology": "replicaSet", "durability": "fast"},
    ],
    "hardware": {"resources": {"limits": {"memory": "2Gi", "cpu": "2"}}, "exclusive": False},
    "runner": {"pods": 4, "threads": 8},
    "dataset": {"shape": "flat45", "records": 4000, "recordSize": 512},
    "phases": [
        {"name": "load", "type": "insert", "batchSize": 10, "reportEvery": 1000},
        {"name": "reads", "type": "pointReads", "keys": 1000, "duration": "90s", "warmup": "250ms",
         "distribution": {"type": "uniform"}},
    ],
    "repeats": 1, "timeout": "1h30m", "startupGrace": "5m",
}  # fmt: skip


def _written_now() -> str:
    spec = parse_spec(SPEC)
    merged = {
        0: StepSummary.from_json((DATA / "merge" / "load" / "summary.json").read_bytes()),
        1: StepSummary.from_json((DATA / "merge" / "reads" / "summary.json").read_bytes()),
    }
    summary = build_run_summary(
        RunRef(namespace="bench", name="previous", uid="7d0c1e52-0000-4000-8000-000000000001"),
        spec, plan(spec), merged,
        started_at=datetime(2026, 11, 26, 6, 49, 51, tzinfo=UTC),
        completed_at=datetime(2026, 11, 26, 6, 51, 33, tzinfo=UTC),
        status_targets=[
            TargetResult(name="db", endpoint="db-0.db:3306", server_version="10.11.6-MariaDB"),
            TargetResult(name="mongo", endpoint="mongo-0.mongo:27017", server_version="8.0.4"),
        ],
        ending=Ending(phase="Failed", reason="Timeout", message="spec.timeout exceeded",
                      current_step=3),
    )  # fmt: skip
    return json.dumps(summary.to_wire(), indent=1) + "\n"


def test_the_summary_is_written_byte_for_byte_as_before() -> None:
    # Durations as the user wrote them (90s, 250ms: not 1m30s), unset fields
    # absent from the spec, every result field present: the format is unchanged.
    assert _written_now() == PREVIOUS.read_text()


def test_a_previous_releases_summary_reads_into_the_api_models() -> None:
    summary = RunSummary.from_json(PREVIOUS.read_bytes())
    assert isinstance(summary.spec, BenchmarkRunSpec)
    reads = summary.spec.phases[1]
    assert reads.duration is not None
    assert reads.warmup is not None
    assert (reads.duration.seconds, reads.warmup.seconds) == (90, 0.25)
    assert summary.spec.timeout.seconds == 5400
    assert summary.spec.hardware_of(summary.spec.targets[0]).price_per_hour == 0.5
    results = [s.result for s in summary.steps if s.result is not None]
    assert results, "the pinned summary has results"
    assert all(isinstance(r, PhaseResult) for r in results)
    assert results[1].latency_ms is not None
    assert results[1].latency_ms.p99 > 0


def test_keys_no_model_knows_are_ignored_in_every_part_of_a_stored_summary() -> None:
    raw = json.loads(PREVIOUS.read_text())
    raw["addedLater"] = 1
    raw["spec"]["addedLater"] = 1
    raw["spec"]["phases"][0]["addedLater"] = {"x": 1}
    raw["spec"]["targets"][0]["hardware"]["addedLater"] = True
    raw["steps"][0]["result"]["addedLater"] = 2
    raw["steps"][0]["result"]["latencyMs"]["p9999"] = 3.0
    summary = RunSummary.from_wire(raw)
    assert summary == RunSummary.from_json(PREVIOUS.read_bytes())


def test_the_runs_series_label_is_written_and_read_back() -> None:
    spec = parse_spec(SPEC)
    meta = {"name": "nightly-1", "namespace": "bench", "uid": "u-1",
            "labels": {"dbbench.io/series": "nightly", "other": "x"}}  # fmt: skip
    run = RunRef.from_meta(meta)
    assert run == RunRef.from_meta({**meta, "labels": {}}), "the series is not the identity"
    summary = build_run_summary(
        run, spec, plan(spec), {}, started_at=None,
        completed_at=datetime(2026, 11, 26, 6, 51, 33, tzinfo=UTC), status_targets=[],
    )  # fmt: skip
    wire = summary.to_wire()
    assert wire["series"] == "nightly"
    assert RunSummary.from_json(json.dumps(wire)).series == "nightly"
    assert RunSummary.from_json(PREVIOUS.read_bytes()).series is None
