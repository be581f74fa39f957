"""A step's runner Job as the operator judges it (pure): no silent retry.

Pod shapes follow what the kubelet and the API server write: an evicted pod
gets condition DisruptionTarget (reason EvictionByEvictionAPI) and, since the
runner stops cleanly on SIGTERM, may still exit 0; a pod killed by SIGKILL
ends with exit code 137; the Job controller marks the other pods for deletion
once the Job fails. `tests/e2e/test_tenant.py` produces each on the real node.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dbbench_contract.summary import StepSummary
from dbbench_operator.k8s import api
from dbbench_operator.naming import RunRef
from dbbench_operator.specs.plan import Step
from dbbench_operator.steps import runner_jobs as running
from dbbench_operator.steps.outcome import failed_step, job_state, stopped_early

PODS = Path(__file__).resolve().parents[3] / "data" / "pods"


def captured(name: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads((PODS / f"{name}.json").read_text())
    return found


def step(index: int) -> Step:
    return Step(index, "db", "p", 1, "pointReads")


def pod(
    name: str = "quick-step-2-0-abcde", *, exit_code: int | None = None, reason: str = "Error",
    message: str = "", phase: str = "Running", conditions: list[dict[str, Any]] | None = None,
    deleting: bool = False,
) -> dict[str, Any]:  # fmt: skip
    state: dict[str, Any] = {"running": {}}
    if exit_code is not None:
        state = {"terminated": {"exitCode": exit_code, "reason": reason, "message": message}}
        phase = "Succeeded" if exit_code == 0 else "Failed"
    meta: dict[str, Any] = {"name": name}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "status": {
        "phase": phase, "conditions": conditions or [],
        "containerStatuses": [{"name": "runner", "state": state}]}}  # fmt: skip


EVICTED = {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
           "message": "Eviction API: evicting"}  # fmt: skip
FAILED_JOB = {"status": {"failed": 1, "conditions": [
    {"type": "Failed", "status": "True", "reason": "PodFailurePolicy"}]}}  # fmt: skip
RUNNING_JOB = {"status": {"active": 2}}
COMPLETE_JOB = {"status": {"succeeded": 2, "conditions": [{"type": "Complete", "status": "True"}]}}


def test_a_failed_runner_says_why_from_its_pod() -> None:
    state = job_state(step(1), FAILED_JOB, [pod(exit_code=4, message="database unreachable: x")])
    assert state.failed
    assert state.reason == "DatabaseUnreachable"
    assert "step 2 (db/p/1): runner pod quick-step-2-0-abcde exited 4" in state.message
    assert "database unreachable" in state.message
    assert "never retried" in state.message
    oom = job_state(step(1), FAILED_JOB, [pod(exit_code=137, reason="OOMKilled")])
    assert oom.reason == "RunnerOOMKilled"
    assert job_state(step(1), FAILED_JOB, [pod(exit_code=3)]).reason == "ErrorRateExceeded"


def test_bad_input_in_the_data_source_fails_the_step_naming_file_and_line() -> None:
    reason = "dataset.source: t.csv line 87: Mileage (column test_mileage): '12O45' is no integer"
    state = job_state(step(0), FAILED_JOB, [pod(exit_code=7, message=reason)])
    assert (state.failed, state.reason) == (True, "DataSourceInvalid")
    assert f"exited 7: {reason}" in state.message


def test_an_evicted_pod_fails_the_step_at_once_even_before_the_job_does() -> None:
    evicted = pod("r-0", conditions=[EVICTED], deleting=True)
    state = job_state(step(0), RUNNING_JOB, [evicted, pod("r-1")])
    assert (state.finished, state.failed, state.reason) == (True, True, "RunnerDisrupted")
    assert "runner pod r-0 was disrupted (EvictionByEvictionAPI" in state.message


def test_an_evicted_pod_that_exited_0_is_not_a_success() -> None:
    """The runner stops cleanly on SIGTERM and exits 0: its pod Succeeded, its window is cut."""
    evicted = pod("r-0", exit_code=0, conditions=[EVICTED])
    state = job_state(step(0), COMPLETE_JOB, [evicted, pod("r-1", exit_code=0)])
    assert (state.failed, state.reason) == (True, "RunnerDisrupted")


def test_a_killed_pod_is_named_with_its_signal_not_the_pods_the_job_deleted_after() -> None:
    killed = pod("r-1", exit_code=137)
    others = [pod("r-0", deleting=True), pod("r-2", deleting=True)]
    state = job_state(step(0), FAILED_JOB, [*others, killed])
    assert state.reason == "RunnerKilled"
    assert "runner pod r-1 was killed (SIGKILL, exit 137)" in state.message


def test_a_pod_deleted_while_the_step_runs_fails_it() -> None:
    state = job_state(step(0), RUNNING_JOB, [pod("r-0", deleting=True), pod("r-1")])
    assert (state.failed, state.reason) == (True, "RunnerDeleted")


def test_a_failed_pod_count_fails_the_step_even_when_its_pod_is_gone() -> None:
    """A Job made by an operator that retried: it completed after a failed attempt,
    whose pod may be gone. The merged window would span both attempts."""
    retried = {"status": {"failed": 1, "succeeded": 2,
                          "conditions": [{"type": "Complete", "status": "True"}]}}  # fmt: skip
    state = job_state(step(0), retried, [pod("r-0", exit_code=0), pod("r-1", exit_code=0)])
    assert (state.failed, state.reason) == (True, "RunnerFailed")
    assert "1 runner pod(s)" in state.message
    counted = job_state(step(0), {"status": {"active": 1, "failed": 1}}, [pod("r-0")])
    assert counted.failed


def test_a_job_past_its_deadline_is_a_timeout_and_a_complete_one_is_finished() -> None:
    deadline = {"status": {"conditions": [
        {"type": "Failed", "status": "True", "reason": "DeadlineExceeded"}]}}  # fmt: skip
    killed_by_deadline = [pod("r-0", deleting=True, exit_code=143)]
    assert job_state(step(0), deadline, killed_by_deadline).reason == "Timeout"
    state = job_state(step(0), COMPLETE_JOB, [pod("r-0", exit_code=0)])
    assert (state.finished, state.failed) == (True, False)
    running = job_state(step(0), RUNNING_JOB, [pod("r-0")])
    assert (running.finished, running.failed) == (False, False)


def test_a_job_failing_on_its_deadline_is_a_timeout_while_its_pods_terminate() -> None:
    """Kubernetes >= 1.31: FailureTarget first, Failed once the pods have ended. A pass
    in between sees the pods deleting (seen on the node under load: RunnerDeleted)."""
    failing = {"status": {"active": 1, "conditions": [
        {"type": "FailureTarget", "status": "True", "reason": "DeadlineExceeded"}]}}  # fmt: skip
    state = job_state(step(0), failing, [pod("r-0", deleting=True)])
    assert (state.finished, state.failed, state.reason) == (True, True, "Timeout")
    exited = {"status": {"active": 1, "conditions": [
        {"type": "FailureTarget", "status": "True", "reason": "PodFailurePolicy"}]}}  # fmt: skip
    pods = [pod("r-0", exit_code=3), pod("r-1", deleting=True)]
    assert "r-0" in job_state(step(0), exited, pods).message


def test_pods_seen_being_deleted_are_judged_against_the_job_as_it_is_now(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A pass reads the Job, then the target, then the Job's pods: by then the Job
    controller may have marked the Job past its deadline and begun deleting its pods
    (seen on the node under load: the run failed as RunnerDeleted, not Timeout)."""
    read_early = {"metadata": {"uid": "j", "name": "r-step-2"}, "status": {"active": 1}}
    now = {**read_early, "status": {"active": 1, "conditions": [
        {"type": "FailureTarget", "status": "True", "reason": "DeadlineExceeded"}]}}  # fmt: skip
    monkeypatch.setattr(api, "list_objects", lambda *_, **__: [pod("r-0", deleting=True)])
    monkeypatch.setattr(running, "find_job", lambda *_: now)
    state, _ = running.follow(RunRef("r", "ns", "uid"), step(1), read_early)
    assert (state.failed, state.reason) == (True, "Timeout")
    # Pods not being deleted: the Job as the pass read it (no second read).
    monkeypatch.setattr(running, "find_job", lambda *_: pytest.fail("read again"))
    monkeypatch.setattr(api, "list_objects", lambda *_, **__: [pod("r-0")])
    assert not running.follow(RunRef("r", "ns", "uid"), step(1), read_early)[0].failed


def test_stuck_runner_pods_are_named_in_the_message() -> None:
    waiting = {"metadata": {"name": "p"}, "status": {"containerStatuses": [
        {"state": {"waiting": {"reason": "ErrImagePull", "message": "not found"}}}]}}  # fmt: skip
    state = job_state(step(0), {"status": {"active": 1}}, [waiting])
    assert not state.finished
    assert "ErrImagePull" in state.message


def test_a_termination_message_loses_hosts_users_and_passwords() -> None:
    message = (
        "database unreachable: cannot connect to mariadb://bench:s3cret@db.example.com:3306/"
        " after 6 attempts: 1045 (28000): Access denied for user 'bench'@'10.244.0.7'"
    )
    state = job_state(step(0), FAILED_JOB, [pod(exit_code=4, message=message)])
    for leaked in ("s3cret", "bench", "db.example.com", "10.244.0.7"):
        assert leaked not in state.message, state.message
    assert "Access denied" in state.message


def test_a_step_a_runner_stopped_early_is_not_a_result() -> None:
    merged = StepSummary.from_wire({
        "target": "db", "engine": "mariadb", "phase": "p", "type": "pointReads",
        "status": "stopped", "operations": 10, "errors": 0, "durationSeconds": 2.0,
        "throughput": 5.0, "latencyMs": {"p50": 1, "p95": 1, "p99": 1, "p999": 1, "max": 1},
    })  # fmt: skip
    found = stopped_early(step(1), merged)
    assert found is not None
    assert found[0] == "RunnerStopped"
    assert stopped_early(step(1), merged.model_copy(update={"status": "succeeded"})) is None


def test_a_step_whose_merged_summary_failed_fails_naming_step_target_repeat_and_why() -> None:
    # Every runner pod exited 0; only the merge over both saw the writes the
    # server did not apply (their own checks can only count too few).
    merged = StepSummary.from_wire({
        "target": "db", "engine": "mongodb", "phase": "load-w0", "type": "insert",
        "status": "failed", "operations": 24, "errors": 120, "pods": [0, 1], "podCount": 2,
        "reason": "error rate 5.0000 exceeds maxErrorRate 0.01; 120 unacknowledged (w:0) "
                  "writes were not applied by the server",
    })  # fmt: skip
    found = failed_step(Step(2, "db", "load-w0", 3, "insert"), merged)
    assert found == ("StepFailed", (
        "step 3 (target db, phase load-w0, repeat 3) failed: error rate 5.0000 exceeds "
        "maxErrorRate 0.01; 120 unacknowledged (w:0) writes were not applied by the server"
    ))  # fmt: skip
    for status in ("succeeded", "stopped"):
        assert failed_step(step(1), merged.model_copy(update={"status": status})) is None


def test_pods_as_the_node_left_them_evicted_and_killed() -> None:
    """Captured on the local node by tests/e2e/test_tenant.py (DBBENCH_CAPTURE_DIR)."""
    evicted = captured("node-evicted-runner")
    state = job_state(step(0), RUNNING_JOB, [evicted])
    assert (state.failed, state.reason) == (True, "RunnerDisrupted")
    assert f"runner pod {evicted['metadata']['name']} was disrupted (EvictionByEvictionAPI" in (
        state.message)  # fmt: skip
    killed = captured("node-killed-runner")
    state = job_state(step(1), FAILED_JOB, [killed])
    assert state.reason == "RunnerKilled"
    assert (
        f"runner pod {killed['metadata']['name']} was killed (SIGKILL, exit 137)" in state.message
    )
