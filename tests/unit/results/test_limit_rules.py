"""The limits' rules as pure functions: free space, the per-run quota's bookkeeping,
the runner's retry horizon, and how a failed run's summary reads its status."""

from __future__ import annotations

from datetime import UTC, datetime
from http import HTTPStatus
from pathlib import Path

import pytest

from dbbench_operator.status.recording import read_status
from dbbench_operator.steps.collecting import Ending, ending_of
from dbbench_results.limits import MIB, Limits, Quotas, RefusedError, check_free_space
from dbbench_runner.uploading import DEADLINE_MARGIN_S, UPLOAD_BUDGET_S, retry_until

LIMITS = Limits(run_quota_bytes=10 * MIB, min_free_bytes=4 * MIB)


def test_free_space_keeps_the_reserve() -> None:
    check_free_space(10 * MIB, 6 * MIB, LIMITS)  # leaves exactly the reserve
    with pytest.raises(RefusedError) as refused:
        check_free_space(10 * MIB, 6 * MIB + 1, LIMITS)
    assert refused.value.status == HTTPStatus.INSUFFICIENT_STORAGE
    assert refused.value.body()["limit"] == "results.minFreeMB"


def test_the_quota_counts_reservations_and_replacements(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "old.bin").write_bytes(b"x" * (2 * MIB))  # on disk before the service started
    quotas = Quotas(LIMITS)
    quotas.reserve(run, "ns/run/uid", 6 * MIB, replaced=0)  # 2 + 6 = 8 MiB
    with pytest.raises(RefusedError) as refused:  # two uploads under way count together
        quotas.reserve(run, "ns/run/uid", 3 * MIB, replaced=0)
    assert refused.value.status == HTTPStatus.REQUEST_ENTITY_TOO_LARGE
    quotas.settle(run, 6 * MIB, stored=0, replaced=0)  # that upload failed: nothing counts
    quotas.reserve(run, "ns/run/uid", 8 * MIB, replaced=0)
    quotas.settle(run, 8 * MIB, stored=8 * MIB, replaced=0)  # 10 MiB stored
    quotas.reserve(run, "ns/run/uid", 2 * MIB, replaced=2 * MIB)  # replacing costs nothing
    quotas.settle(run, 2 * MIB, stored=2 * MIB, replaced=2 * MIB)
    with pytest.raises(RefusedError):
        quotas.reserve(run, "ns/run/uid", 1, replaced=0)


def test_uploads_are_retried_until_shortly_before_the_jobs_deadline() -> None:
    deadline = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    assert retry_until(deadline, 0.0) == deadline.timestamp() - DEADLINE_MARGIN_S
    assert retry_until(None, 1000.0) == 1000.0 + UPLOAD_BUDGET_S


def test_a_failed_runs_ending_is_read_from_its_status() -> None:
    status = {
        "phase": "Failed",
        "message": "step 2/3 (db/mix/1): runner pod db-step-2-0 failed",
        "conditions": [
            {"type": "Progressing", "status": "False", "reason": "StepFailed", "message": "x"},
            {"type": "Failed", "status": "True", "reason": "StepFailed", "message": "pod failed"},
        ],
        "progress": {"step": 2, "stepsDone": 1},
    }
    assert ending_of(read_status(status)) == Ending("Failed", "StepFailed", "pod failed", 2)
    plain = read_status({"phase": "Failed", "message": "m"})
    assert ending_of(plain) == Ending("Failed", None, "m", None)
