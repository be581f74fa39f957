"""Progress while a step runs: the pods' progress.json added up for the operator
(operations, rates, records summed; percent the pods' mean with the silent ones at
0; the ETA the slowest pod's), read back by newer programs alike."""

from __future__ import annotations

import pytest

from dbbench_contract.progress import PodProgress, StepProgress, add_up


def pod(**fields: float | None) -> PodProgress:
    return PodProgress.model_validate({"phase": "load", **fields})


def test_a_steps_progress_is_its_pods_added_up() -> None:
    reports = [
        pod(operations=100, errors=1, rate=50.0, records=1000, records_per_second=500.0,
            percent=40.0, eta_seconds=30.0),
        pod(operations=300, errors=0, rate=70.0, records=3000, records_per_second=700.0,
            percent=80.0, eta_seconds=10.0),
    ]  # fmt: skip
    step = add_up(3, reports, finished=0)
    assert (step.pods, step.reporting, step.finished) == (3, 2, 0)
    assert (step.operations, step.errors, step.records) == (400, 1, 4000)
    assert (step.rate, step.records_per_second) == (120.0, 1200.0)
    # Pods share the work evenly: the third pod, not reporting yet, counts as 0 %.
    assert step.percent == pytest.approx(40.0)
    assert step.eta_seconds == 30.0  # the slowest pod's


def test_no_percent_or_eta_until_a_pod_knows_one() -> None:
    step = add_up(2, [pod(operations=5)], finished=0)
    assert (step.percent, step.eta_seconds) == (None, None)
    assert add_up(2, [], finished=0) == StepProgress(pods=2)


def test_progress_files_use_the_wire_names_and_keep_what_a_newer_runner_adds() -> None:
    raw = {"phase": "load", "operations": 7, "recordsPerSecond": 3.5, "p99Ms": 2.0,
           "etaSeconds": 4.0, "writtenByANewerRunner": True}  # fmt: skip
    read = PodProgress.from_wire(raw)
    assert (read.operations, read.records_per_second, read.p99_ms) == (7, 3.5, 2.0)
    assert "writtenByANewerRunner" not in read.to_wire()
    assert read.to_wire()["etaSeconds"] == 4.0
