"""Results and progress as the status shows them (pure)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from dbbench_contract.api.status import BenchmarkRunStatus
from dbbench_contract.summary import StepSummary
from dbbench_contract.tokens import run_token as service_token
from dbbench_operator.naming import RunRef
from dbbench_operator.specs.plan import Step
from dbbench_operator.specs.tokens import run_token
from dbbench_operator.status.summaries import (
    MAX_STATUS_RESULTS,
    compacted,
    phase_result,
    run_progress,
    saturation,
    with_result,
)

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
BASE = {"target": "db", "engine": "mariadb", "phase": "p", "type": "mix"}
MERGED = {
    **BASE, "status": "succeeded", "operations": 123456, "errors": 3, "records": 12345600,
    "durationSeconds": 20.00123, "throughput": 6172.7123, "recordsPerSecond": 12345600 / 20.00123,
    "latencyMs": {"p50": 0.1234, "p95": 0.4567, "p99": 0.78912, "p999": 1.23456, "max": 12.3456},
    "storage": {"dataBytes": 123456789, "indexBytes": 12345678, "storageBytes": 234567890,
                "records": 1},
    "operationsByType": {"insert": {"operations": 123456}},
}  # fmt: skip


USAGE = {"cpus": 1.0, "cpuSeconds": 1.0, "waitSeconds": 0.0, "wallSeconds": 1.0,
         "operations": 10}  # fmt: skip


def summary(raw: dict[str, Any]) -> StepSummary:
    return StepSummary.from_wire(raw)


def result_of(s: Step, raw: dict[str, Any]) -> dict[str, Any]:
    return phase_result(s, summary(raw)).model_dump(by_alias=True, exclude_none=True, mode="json")


def step(index: int, target: str = "db", phase: str = "p", repeat: int = 1) -> Step:
    return Step(index, target, phase, repeat, "mix")


def test_a_phase_result_is_the_merged_summary_compacted() -> None:
    result = result_of(step(0, phase="load"), MERGED)
    assert result["operations"] == 123456
    assert result["recordsPerSecond"] == round(12345600 / 20.00123, 1)
    assert result["latencyMs"]["p99"] == 0.789
    assert result["storage"] == {"dataBytes": 123456789, "indexBytes": 12345678,
                                 "storageBytes": 234567890, "records": 1}  # fmt: skip
    assert "operationsByType" not in result


def test_a_mix_that_wrote_no_record_says_0_and_a_read_phase_says_nothing() -> None:
    """(Before: `records` was dropped when 0, so a mix whose few operations drew no
    insert looked like a phase that writes nothing.)"""
    no_insert = {**MERGED, "records": 0, "recordsPerSecond": 0.0,
                 "operationsByType": {"read": {"operations": 123456}}}  # fmt: skip
    for phase_type in ("mix", "insert"):
        result = result_of(step(0), {**no_insert, "type": phase_type})
        assert (result["records"], result["recordsPerSecond"]) == (0, 0.0), phase_type
    for phase_type in ("pointReads", "query"):
        result = result_of(step(0), {**no_insert, "type": phase_type})
        assert "records" not in result, phase_type
        assert "recordsPerSecond" not in result, phase_type


def test_a_mix_without_an_insert_share_shows_no_records_rate() -> None:
    """The runner says whether the phase inserts (`writesRecords`); summaries from
    runners before the field keep the phase type's rule. (Before: the quickstart's
    read/update mix showed RECORDS/S 0.0.)"""
    no_insert = {**MERGED, "records": 0, "recordsPerSecond": 0.0,
                 "operationsByType": {"read": {"operations": 123456}}}  # fmt: skip
    reads_and_updates = result_of(step(0), {**no_insert, "writesRecords": False})
    assert "records" not in reads_and_updates
    assert "recordsPerSecond" not in reads_and_updates
    drew_no_insert = result_of(step(0), {**no_insert, "writesRecords": True})
    assert (drew_no_insert["records"], drew_no_insert["recordsPerSecond"]) == (0, 0.0)
    older_runner = result_of(step(0), no_insert)
    assert (older_runner["records"], older_runner["recordsPerSecond"]) == (0, 0.0)


def test_a_client_bound_step_names_its_pods_and_asks_for_more_runners() -> None:
    pods = [
        {**USAGE, "pod": 0, "demand": 0.97, "bound": True},
        {**USAGE, "pod": 1, "demand": 0.40, "bound": False},
    ]
    bound = {**MERGED, "clientBound": True, "clientUtilization": 0.9123, "clientCpuPerOpUs": 41.237,
             "clientBoundThreshold": 0.8, "clientByPod": pods}  # fmt: skip
    result = result_of(step(1, target="maria", phase="reads", repeat=2), bound)
    assert (result["clientBound"], result["clientUtilization"]) == (True, 0.912)
    assert result["clientCpuPerOpUs"] == 41.24
    BenchmarkRunStatus.model_validate({"targets": [{"name": "maria", "phases": [result]}]})
    found = saturation(step(1, target="maria", phase="reads", repeat=2), summary(bound))
    assert found is not None
    reason, message = found
    assert reason == "RunnerSaturated"
    assert message.startswith("runner saturated: add runner pods or threads")
    assert "target maria, phase reads, repeat 2" in message
    assert "pod(s) 0 used 97%" in message
    light = {**MERGED, "clientBound": False, "clientUtilization": 0.1, "clientByPod": pods[1:]}
    assert saturation(step(1), summary(light)) is None
    assert saturation(step(1), summary(MERGED)) is None  # summaries of older runners
    assert "clientBound" not in result_of(step(1), MERGED)


def test_status_of_a_5_target_10_phase_run_stays_well_under_100_kb() -> None:
    targets: list[dict[str, Any]] = []
    for t in range(5):
        for p in range(10):
            s = step(t * 10 + p, f"target-number-{t}", f"phase-with-a-long-name-{p}")
            targets = with_result(targets, s, phase_result(s, summary(MERGED)))
    status = {"phase": "Succeeded", "targets": targets,
              "conditions": [{"type": "Progressing", "status": "False", "reason": "Completed",
                              "message": "x" * 200}]}  # fmt: skip
    BenchmarkRunStatus.model_validate(status)
    size = len(json.dumps(status))
    assert size < 50_000, size


def test_many_repeats_keep_the_status_bounded_and_every_phases_last_repeat() -> None:
    targets: list[dict[str, Any]] = []
    index = 0
    for t in range(8):
        for p in range(4):
            for r in range(1, 11):
                s = step(index, f"t{t}", f"p{p}", r)
                targets = with_result(targets, s, phase_result(s, summary(MERGED)))
                index += 1
    kept, omitted = compacted(targets)
    assert sum(len(t["phases"]) for t in kept) == MAX_STATUS_RESULTS
    assert omitted == 320 - MAX_STATUS_RESULTS
    for target in kept:
        last = {p["name"]: p["repeat"] for p in target["phases"]}
        assert last == {f"p{p}": 10 for p in range(4)}
    assert len(json.dumps(kept)) < 100_000


def test_a_result_recorded_twice_is_kept_once() -> None:
    s = step(0)
    targets = with_result([], s, phase_result(s, summary(MERGED)))
    assert with_result(targets, s, phase_result(s, summary(MERGED))) == targets


def test_run_progress_counts_the_running_step_and_extrapolates_the_eta() -> None:
    started = NOW - timedelta(minutes=10)
    progress = run_progress(1, 4, 50.0, started, NOW)
    assert progress.percent == 37
    assert progress.eta is not None
    assert abs((progress.eta - NOW).total_seconds() - 600 * 0.625 / 0.375) < 1
    assert run_progress(0, 4, None, started, NOW).eta is None


def test_operator_and_results_service_derive_the_same_token() -> None:
    run = RunRef(name="quick", namespace="team-a", uid="1234-uid")
    key = b"0123456789abcdef0123456789abcdef"
    assert run_token(key, run) == service_token(key, "team-a", "quick", "1234-uid")
