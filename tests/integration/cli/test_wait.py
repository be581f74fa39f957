"""`dbbench wait RUN` against the real kube-apiserver (issue 31, item 4): it
blocks until the run ends (a watch: the run is patched to its end while the
command waits), prints the phase, each expectation's outcome and the
ChangePoint verdict, and exits 0 only when the run Succeeded and no
expectation was missed: 1 failed, 2 expectation missed, 3 timed out, 4 no run.

The statuses are patched as the operator writes them; that the operator writes
them so, from a run's real results: tests/integration/operator/test_expectations_run.py."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.cli.test_cli_kube import create_run, patch_status
from tests.support.manifests import crd_and_namespace

pytestmark = pytest.mark.integration

NAMESPACE = "dbbench-cli-test"
SPEC = {
    "targets": [{"name": "db", "engine": "mariadb"}],
    "phases": [{"name": "load", "type": "insert"},
               {"name": "reads", "type": "pointReads", "operations": 1000}],
    "expectations": [{"phase": "reads", "minOpsPerSecond": 500, "maxLatency": {"p99": "2ms"}},
                     {"phase": "load", "maxErrorRate": 0, "onMiss": "Record"}],
}  # fmt: skip


@pytest.fixture(scope="module")
def cluster(kube_cluster: Any) -> Iterator[Any]:
    with crd_and_namespace(kube_cluster, NAMESPACE, "dbbench-cli-test") as cluster:
        yield cluster


def outcome(index: int, phase: str, bound: str, verdict: str, limit: float, measured: float,
            unit: str, by: float | None, on_miss: str = "Fail") -> dict[str, Any]:  # fmt: skip
    return {"expectation": index, "target": "db", "phase": phase, "bound": bound,
            "verdict": verdict, "limit": limit, "measured": measured, "unit": unit, "repeat": 1,
            "byPercent": by, "onMiss": on_miss}  # fmt: skip


HELD = [
    outcome(0, "reads", "minOpsPerSecond", "Held", 500, 812.5, "ops/s", -62.5),
    outcome(0, "reads", "maxLatency.p99", "Held", 2, 1.25, "ms", -37.5),
    outcome(1, "load", "maxErrorRate", "Held", 0, 0, "fraction", None, "Record"),
]
SLOW = outcome(0, "reads", "minOpsPerSecond", "Missed", 500, 400, "ops/s", 20.0)
MISSED_MESSAGE = "1 of 3 bounds missed: expectations[0] db/reads minOpsPerSecond >= 500 ops/s"


def condition(kind: str, status: str, reason: str, message: str) -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": "2026-01-01T00:00:00Z"}  # fmt: skip


def ended(phase: str, outcomes: list[dict[str, Any]], *conditions: dict[str, Any]) -> Any:
    return {"phase": phase, "expectations": outcomes, "conditions": list(conditions)}


def wait(cluster: Any, name: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dbbench_cli", "--kubeconfig", str(cluster.kubeconfig),
         "-n", NAMESPACE, "wait", name, *extra],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_a_run_that_succeeded_and_held_every_expectation_exits_zero(
    cluster: Any, tmp_path: Path
) -> None:
    create_run(cluster, tmp_path, "held", SPEC)
    change = condition("ChangePoint", "False", "NoChange", "no change point in 6 runs")
    patch_status(cluster, "held", ended("Succeeded", HELD, change,
                 condition("Expectations", "True", "Met", "all 3 judged bounds held")))  # fmt: skip
    done = wait(cluster, "held")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"run {NAMESPACE}/held: Succeeded"
    assert ("  held      expectations[0] db/reads minOpsPerSecond >= 500 ops/s: measured "
            "812.5 ops/s (repeat 1), held by 62.5%") in lines  # fmt: skip
    assert "  change point: NoChange: no change point in 6 runs" in lines


def test_a_missed_expectation_exits_two_naming_it_whatever_its_policy(
    cluster: Any, tmp_path: Path
) -> None:
    create_run(cluster, tmp_path, "gated", SPEC)
    patch_status(cluster, "gated", ended(
        "Failed", [SLOW, *HELD[1:]],
        condition("Failed", "True", "ExpectationsMissed", MISSED_MESSAGE),
        condition("Expectations", "False", "Missed", MISSED_MESSAGE),
    ))  # fmt: skip
    gated = wait(cluster, "gated")
    assert gated.returncode == 2, gated.stdout + gated.stderr
    assert f"  failed: ExpectationsMissed: {MISSED_MESSAGE}" in gated.stdout
    assert ("  missed    expectations[0] db/reads minOpsPerSecond >= 500 ops/s: measured "
            "400 ops/s (repeat 1), missed by 20%") in gated.stdout.splitlines()  # fmt: skip
    # onMiss: Record: the run Succeeded, and a pipeline still learns of the miss.
    create_run(cluster, tmp_path, "recorded", SPEC)
    recorded_miss = outcome(1, "load", "maxErrorRate", "Missed", 0, 0.002, "fraction", None,
                            "Record")  # fmt: skip
    patch_status(cluster, "recorded", ended("Succeeded", [*HELD[:2], recorded_miss]))
    recorded = wait(cluster, "recorded")
    assert recorded.returncode == 2, recorded.stdout
    assert "missed    expectations[1] db/load maxErrorRate <= 0: measured 0.002" in recorded.stdout


def test_a_failed_run_exits_one_with_its_reason(cluster: Any, tmp_path: Path) -> None:
    create_run(cluster, tmp_path, "broken", SPEC)
    why = "step 2 (target db, phase reads, repeat 1) failed: error rate 0.5 > 0.01"
    patch_status(cluster, "broken", ended("Failed", [], condition("Failed", "True", "StepFailed",
                                                                   why)))  # fmt: skip
    broken = wait(cluster, "broken")
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert f"  failed: StepFailed: {why}" in broken.stdout
    assert "  expectations: not judged (the run ended before its last step)" in broken.stdout


def test_wait_blocks_until_the_run_ends_and_times_out_naming_the_phase(
    cluster: Any, tmp_path: Path
) -> None:
    create_run(cluster, tmp_path, "later", SPEC)
    patch_status(cluster, "later", {"phase": "Running"})
    started = time.monotonic()
    timed_out = wait(cluster, "later", "--timeout", "2s")
    assert timed_out.returncode == 3, timed_out.stdout + timed_out.stderr
    assert timed_out.stdout == f"run {NAMESPACE}/later: still Running after 2s\n"
    assert 2 <= time.monotonic() - started < 60
    waiting = subprocess.Popen(
        [sys.executable, "-m", "dbbench_cli", "--kubeconfig", str(cluster.kubeconfig),
         "-n", NAMESPACE, "wait", "later", "--timeout", "2m"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        time.sleep(4)  # the command reads the run, then watches it
        assert waiting.poll() is None, "wait returned while the run was Running"
        patch_status(cluster, "later", {"phase": "Collecting"})
        time.sleep(1)
        assert waiting.poll() is None, "wait returned while the run was Collecting"
        patch_status(cluster, "later", ended("Succeeded", HELD))
        out, err = waiting.communicate(timeout=60)
    finally:
        waiting.kill()
    assert waiting.returncode == 0, out + err
    assert out.startswith(f"run {NAMESPACE}/later: Succeeded\n")


def test_an_unknown_run_or_duration_is_an_error(cluster: Any) -> None:
    unknown = wait(cluster, "nosuchrun")
    assert unknown.returncode == 4
    assert f"no BenchmarkRun 'nosuchrun' in namespace '{NAMESPACE}'" in unknown.stderr
    bad = wait(cluster, "nosuchrun", "--timeout", "soon")
    assert bad.returncode == 2  # argparse's own usage error
    assert "'soon' is not a duration like 90s, 5m or 1h30m" in bad.stderr
