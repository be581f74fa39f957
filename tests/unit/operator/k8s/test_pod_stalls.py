"""Why a pod has not started, from real pod status shapes (pure).

`tests/data/pods/*.json` are pods and events captured from the test control
plane (scheduler, controller-manager) and from the local node's kubelet (each
file says where in `_captured`), trimmed to metadata and status.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from dbbench_operator.k8s.pod_stalls import (
    MESSAGE_LIMIT,
    Stall,
    controller_stall,
    judge,
    latest_warning,
    needs_events,
    parse_time,
    pod_stall,
)

PODS = Path(__file__).resolve().parents[3] / "data" / "pods"


def captured(name: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads((PODS / f"{name}.json").read_text())
    return found


def events_of(name: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = captured(name)["items"]
    return found


def test_the_schedulers_refusal_is_the_reason_and_its_message_the_detail() -> None:
    pod = captured("unschedulable-insufficient-cpu")
    stall = pod_stall(pod)
    assert stall is not None
    assert stall.subject == "pod db-1"
    assert stall.reason == "Unschedulable"
    assert stall.message.startswith("0/1 nodes are available: 1 Insufficient cpu.")
    assert stall.since == datetime(2026, 11, 23, 19, 19, 18, tzinfo=UTC)
    assert stall.describe().startswith("pod db-1 Unschedulable: 0/1 nodes are available")
    # Runner pods are judged the same way until they run.
    assert pod_stall(pod, need_ready=False) == stall
    no_node = pod_stall(captured("unschedulable-no-node"))
    assert no_node is not None
    assert (no_node.reason, no_node.message) == (
        "Unschedulable", "no nodes available to schedule pods")  # fmt: skip
    assert not needs_events(stall)


def test_a_pod_being_deleted_is_not_waited_for() -> None:
    pod = captured("unschedulable-no-node")
    pod["metadata"]["deletionTimestamp"] = "2026-11-23T19:20:00Z"
    assert pod_stall(pod) is None


def test_the_grace_is_counted_from_the_longest_wait() -> None:
    now = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
    old = Stall("pod a-0", "CrashLoopBackOff", "", now - timedelta(seconds=301))
    new = Stall("pod a-1", "Unschedulable", "", now - timedelta(seconds=10))
    unknown = Stall("pod a-2", "Pending", "", None)
    verdict = judge([new, unknown, old], 300, now)
    assert verdict.stall == old
    assert verdict.overdue
    assert verdict.deadline == now - timedelta(seconds=1)
    calm = judge([new, unknown], 300, now)
    assert calm.stall == new
    assert not calm.overdue
    assert calm.deadline == now + timedelta(seconds=290)
    assert judge([], 300, now).stall is None


def test_a_controllers_failed_create_event_explains_missing_pods() -> None:
    sts = controller_stall("StatefulSet", "db", events_of("quota-statefulset-db.events"))
    assert sts is not None
    assert (sts.subject, sts.reason) == ("StatefulSet db", "FailedCreate")
    assert 'pods "db-0" is forbidden: exceeded quota: no-pods' in sts.message
    assert sts.since == parse_time("2026-11-23T20:00:36Z")
    # A Job's every attempt is its own event (a new pod name): the wait began
    # with the first, not the latest, or the grace would never run out.
    job = controller_stall("Job", "runner", events_of("quota-job-runner.events"))
    assert job is not None
    assert job.reason == "FailedCreate"
    assert "exceeded quota: no-pods" in job.message
    assert job.since == parse_time("2026-11-23T20:00:36Z")
    normal = {"type": "Normal", "reason": "SuccessfulCreate", "message": "created pod x-0"}
    assert controller_stall("Job", "y", [normal]) is None


def test_latest_warning_prefers_the_newest_and_names_probe_failures() -> None:
    events = [
        {"type": "Warning", "reason": "FailedMount", "message": "old",
         "lastTimestamp": "2026-11-23T19:00:00Z"},
        {"type": "Warning", "reason": "Unhealthy",
         "message": "Readiness probe failed: connection refused",
         "eventTime": "2026-11-23T19:00:05.123456Z"},
    ]  # fmt: skip
    assert latest_warning(events) == ("ReadinessProbeFailed",
                                      "Readiness probe failed: connection refused")  # fmt: skip
    assert latest_warning([]) is None


def test_an_image_the_node_may_not_pull_is_the_kubelets_reason() -> None:
    stall = pod_stall(captured("node-image-missing"))
    assert stall is not None
    assert stall.reason == "ErrImageNeverPull"
    assert stall.message == (
        'container mariadb; Container image "docker.io/library/mariadb:10.3" is not present '
        "with pull policy of Never"
    )
    # Not ready since the pod started: the grace counts from there.
    assert stall.since == datetime(2026, 11, 23, 19, 44, 58, tzinfo=UTC)


def test_a_crash_loop_says_how_the_container_last_ended() -> None:
    pod = captured("node-crash-loop")
    stall = pod_stall(pod)
    assert stall is not None
    assert stall.reason == "CrashLoopBackOff"
    assert "back-off 20s restarting failed container=mariadb" in stall.message
    assert "last exit code 7 (Error) after 2 restart(s)" in stall.message
    # The termination message (the container's last log lines), on one line.
    assert "[ERROR] mariadbd: unknown variable innodb_flush_method=bogus [ERROR] Aborting" in (
        stall.message
    )
    # Between two crashes the container runs (not ready) and the kubelet's BackOff
    # event is the only word: still CrashLoopBackOff, with the last ending.
    status = pod["status"]["containerStatuses"][0]
    status["state"] = {"running": {"startedAt": "2026-11-23T19:45:35Z"}}
    vague = pod_stall(pod)
    assert vague is not None
    assert needs_events(vague)
    between = pod_stall(pod, events_of("node-crash-loop.events"))
    assert between is not None
    assert between.reason == "CrashLoopBackOff"
    assert between.message.startswith("Back-off restarting failed container mariadb in pod")
    assert "last exit code 7 (Error)" in between.message
    # Just restarted, the server fails its startup probe before it crashes again:
    # the probe failure is the newest warning, the crash is still the reason (the
    # e2e crash-loop test once failed with StartupProbeFailed when a pass, started
    # by the restart itself, landed there).
    refused = "Startup probe failed: dial tcp 10.244.0.57:3306: connect: connection refused"
    probe = {"type": "Warning", "reason": "Unhealthy", "message": refused,
             "lastTimestamp": "2026-11-23T23:59:59Z"}  # fmt: skip
    restarted = pod_stall(pod, [*events_of("node-crash-loop.events"), probe])
    assert restarted is not None
    assert restarted.reason == "CrashLoopBackOff"
    assert restarted.message.startswith("Startup probe failed: dial tcp")
    assert "last exit code 7 (Error) after 2 restart(s)" in restarted.message
    # A probe failing in a container that never crashed is the probe's failure.
    status["restartCount"] = 0
    status["lastState"] = {}
    never_crashed = pod_stall(pod, [*events_of("node-crash-loop.events"), probe])
    assert never_crashed is not None
    assert never_crashed.reason == "StartupProbeFailed"


def test_a_failing_readiness_probe_is_named_from_the_pods_events() -> None:
    pod = captured("node-never-ready")
    vague = pod_stall(pod)
    assert vague is not None
    assert (vague.reason, vague.message) == (
        "ContainersNotReady", "containers with unready status: [mariadb]")  # fmt: skip
    assert needs_events(vague)
    stall = pod_stall(pod, events_of("node-never-ready.events"))
    assert stall is not None
    assert stall.reason == "ReadinessProbeFailed"
    assert stall.message == "Readiness probe failed: cannot connect to 127.0.0.1:3306"
    # A runner pod has no readiness to wait for: running is started.
    assert pod_stall(pod, need_ready=False) is None


def test_the_schedulers_words_on_a_real_node() -> None:
    stall = pod_stall(captured("node-unschedulable"))
    assert stall is not None
    assert stall.reason == "Unschedulable"
    assert "1 node(s) didn't match Pod's node affinity/selector" in stall.message


def test_a_crash_loop_keeps_its_exit_code_when_the_last_words_are_long() -> None:
    """An entrypoint that logs its steps (the staged first initialisation) leaves
    last words longer than the whole message: they are shortened, keeping their
    end, and the exit code stays (the e2e crash-loop test saw it cut off, the
    message shortened as a whole from its front)."""
    pod = captured("node-crash-loop")
    status = pod["status"]["containerStatuses"][0]
    steps = " ".join(
        f"[Note] [Entrypoint]: step {i} of the first initialisation" for i in range(40)
    )
    status["lastState"]["terminated"]["message"] = f"{steps} [ERROR] Aborting"
    stall = pod_stall(pod)
    assert stall is not None
    assert stall.reason == "CrashLoopBackOff"
    assert "back-off 20s restarting failed container=mariadb" in stall.message
    assert "last exit code 7 (Error) after 2 restart(s): ..." in stall.message
    assert stall.message.endswith("[ERROR] Aborting")
    assert len(stall.message) <= MESSAGE_LIMIT
    # Between two crashes, from the kubelet's event: the same.
    status["state"] = {"running": {"startedAt": "2026-11-23T19:45:35Z"}}
    between = pod_stall(pod, events_of("node-crash-loop.events"))
    assert between is not None
    assert "last exit code 7 (Error) after 2 restart(s): ..." in between.message
    assert between.message.endswith("[ERROR] Aborting")
    assert len(between.message) <= MESSAGE_LIMIT
