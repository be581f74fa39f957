"""The operator's metrics registry: runs by phase from watch events, and a port it
cannot bind never stops the operator."""

from __future__ import annotations

import logging
import socket

import pytest

from dbbench_operator.controller.metrics import OperatorMetrics, RunPhases
from dbbench_operator.status.lifecycle import RunPhase


def test_runs_are_counted_by_their_latest_phase_and_forgotten_when_deleted() -> None:
    runs = RunPhases()
    runs.seen("a", {})  # no status yet: Pending
    runs.seen("b", {"phase": "Running"})
    runs.seen("a", {"phase": "Running"})
    runs.seen("c", {"phase": "Failed"})
    runs.seen("c", {"phase": "Failed"}, deleted=True)
    counts = runs.counts()
    assert counts[RunPhase.RUNNING] == 2
    assert counts[RunPhase.PENDING] == counts[RunPhase.FAILED] == 0
    assert set(counts) == set(RunPhase)
    runs.clear()
    assert sum(runs.counts().values()) == 0


def test_a_taken_port_is_logged_and_the_operator_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with caplog.at_level(logging.ERROR, logger="dbbench_operator.controller.metrics"):
            OperatorMetrics().serve(port, addr="127.0.0.1")  # does not raise
    assert f"/metrics not served on 127.0.0.1:{port}" in caplog.text
