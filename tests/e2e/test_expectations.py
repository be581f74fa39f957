"""Expectations on the real node (issue 31, "Done when"): a run that misses an
expectation ends as its policy says, and `dbbench wait` exits non-zero naming
it. Two small MariaDB runs share the node (concurrent, not disruptive): one
gated (onMiss: Fail) ends Failed with reason ExpectationsMissed; one recorded
(onMiss: Record) ends Succeeded with the Expectations condition False. The
figures `dbbench wait` prints are the status's, measured by the runner pods:
the bound on reads no server reaches (1e9 ops/s) is missed by what they read."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from dbbench_local.install import Kube
from tests.e2e.conftest import (
    RUNS_NS,
    apply_run,
    condition,
    delete_run,
    session_name,
    small_spec,
    wait_phase,
)

pytestmark = pytest.mark.e2e

LOAD = {"name": "load", "type": "insert", "batchSize": 100, "reportEvery": 1000}
READS = {"name": "reads", "type": "pointReads", "operations": 2000}
IMPOSSIBLE = 1e9


def _spec(on_miss: str) -> dict[str, Any]:
    return small_spec(phases=[LOAD, READS], expectations=[
        {"phase": "reads", "minOpsPerSecond": IMPOSSIBLE, "onMiss": on_miss},
        {"phase": "load", "maxLatency": {"p99": "30s"}, "maxErrorRate": 0.01},
    ])  # fmt: skip


def dbbench_wait(kube: Kube, name: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dbbench_cli", "--kubeconfig", str(kube.kubeconfig),
         "-n", RUNS_NS, "wait", name, "--timeout", "15m"],
        capture_output=True, text=True, timeout=1000, check=False,
    )  # fmt: skip


def test_a_missed_expectation_ends_the_run_as_its_policy_says_and_wait_exits_two(
    kube: Kube,
) -> None:
    gated, recorded = session_name("expect-gated"), session_name("expect-recorded")
    apply_run(kube, gated, _spec("Fail"))
    apply_run(kube, recorded, _spec("Record"))
    try:
        # wait blocks until the run ends (the run was just applied: Pending).
        waited = dbbench_wait(kube, gated)
        status = wait_phase(kube, gated, ("Succeeded", "Failed"), 60)
        assert status["phase"] == "Failed", status.get("message")
        assert condition(status, "Failed")["reason"] == "ExpectationsMissed"
        ops, latency, errors = status["expectations"]
        reads = next(p for p in status["targets"][0]["phases"] if p["name"] == "reads")
        assert (ops["verdict"], ops["measured"]) == ("Missed", pytest.approx(reads["throughput"],
                                                                             abs=0.1))  # fmt: skip
        assert [latency["verdict"], errors["verdict"]] == ["Held", "Held"]
        assert waited.returncode == 2, waited.stdout + waited.stderr
        assert f"run {RUNS_NS}/{gated}: Failed" in waited.stdout
        assert "missed    expectations[0] maria/reads minOpsPerSecond >= 1e+09 ops/s" in (
            waited.stdout
        )

        waited = dbbench_wait(kube, recorded)
        status = wait_phase(kube, recorded, ("Succeeded", "Failed"), 60)
        assert status["phase"] == "Succeeded", status.get("message")
        judged = condition(status, "Expectations")
        assert (judged["status"], judged["reason"]) == ("False", "Missed")
        assert waited.returncode == 2, waited.stdout + waited.stderr
        assert f"run {RUNS_NS}/{recorded}: Succeeded" in waited.stdout
        assert "missed    expectations[0] maria/reads minOpsPerSecond" in waited.stdout
    finally:
        delete_run(kube, gated)
        delete_run(kube, recorded)
