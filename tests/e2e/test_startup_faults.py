"""Runs whose database pods cannot start, on the real node: each says why
within a reconcile interval or two (in the pod's own words), fails after its
`startupGrace` with that reason, and leaves nothing behind. Requests larger
than the node are refused before anything is deployed."""

from __future__ import annotations

import time
from typing import Any

import pytest

from dbbench_local.install import Kube, wait_for
from tests.e2e.conftest import (
    RUNS_NS,
    apply_run,
    condition,
    database_pod_objects,
    owned_children,
    run_status,
    run_uid,
    session_name,
    small_spec,
    wait_phase,
)

pytestmark = pytest.mark.e2e

GRACE_S = 45
# A pass every 5 s: the reason shows within one or two of them once the pod
# has it; failing takes the grace, then a pass or two.
REPORT_BOUND_S = 60
FAIL_SLACK_S = 30
RUNNING_KINDS = ("Pod", "Job", "StatefulSet", "Deployment", "Service", "PersistentVolumeClaim")


def faulty_spec(**target: Any) -> dict[str, Any]:
    spec = small_spec(startupGrace=f"{GRACE_S}s")
    spec["targets"] = [{**spec["targets"][0], **target}]
    return spec


def reported(kube: Kube, name: str, reasons: str | tuple[str, ...]) -> dict[str, Any]:
    wanted = (reasons,) if isinstance(reasons, str) else reasons

    def seen() -> dict[str, Any] | None:
        for c in run_status(kube, name).get("conditions") or []:
            if c["type"] == "TargetsReady" and c["reason"] in wanted:
                return dict(c)
        return None

    found: dict[str, Any] = wait_for(seen, REPORT_BOUND_S, f"{name}: TargetsReady={wanted}")
    return found


def database_pod(kube: Kube, name: str) -> dict[str, Any]:
    (pod,) = database_pod_objects(kube, name, run_uid(kube, name))
    return pod


def warnings(kube: Kube, name: str, reason: str) -> list[dict[str, Any]]:
    """This run's Warning events (by uid: an earlier run of the same name has its own)."""
    selector = f"--field-selector=involvedObject.uid={run_uid(kube, name)},reason={reason}"
    events = kube.get("events", "-n", RUNS_NS, selector) or {"items": []}
    return [e for e in events["items"] if e["type"] == "Warning"]


def fails_after_the_grace(
    kube: Kube, name: str, reasons: str | tuple[str, ...], first_seen: float
) -> dict[str, Any]:
    """Failed with one of `reasons` after the grace (not much later), then nothing
    left running."""
    wanted = (reasons,) if isinstance(reasons, str) else reasons
    status = wait_phase(kube, name, ("Failed", "Succeeded"), GRACE_S + FAIL_SLACK_S + 60)
    waited = time.monotonic() - first_seen
    failed = condition(status, "Failed")
    assert status["phase"] == "Failed", status
    assert failed["reason"] in wanted, failed
    assert f"did not start within spec.startupGrace ({GRACE_S}s)" in failed["message"]
    assert waited < GRACE_S + FAIL_SLACK_S, f"failed {waited:.0f}s after the reason showed"

    # kopf posts Events from a queue of its own, after the status patch that made
    # the run Failed: the Event may follow the phase by a moment (seen on the node).
    def failure_posted() -> bool:
        posted = [e["message"] for e in warnings(kube, name, failed["reason"])]
        return any(m.startswith(failed["message"][:200]) for m in posted)  # events cut at 1 KiB

    try:
        wait_for(failure_posted, 30, f"{name}: the Failed condition's Warning event", every=1)
    except TimeoutError:
        posted = [e["message"] for e in warnings(kube, name, failed["reason"])]
        raise AssertionError((failed["message"], posted)) from None
    wait_for(lambda: run_status(kube, name).get("cleanedUp"), 60, f"{name}: cleanup")

    def nothing_runs() -> bool:
        left = owned_children(kube, name)
        return not any(left.get(kind) for kind in RUNNING_KINDS)

    wait_for(nothing_runs, 120, f"{name}: its pods, StatefulSets, Services and claims to go")
    return status


def deleted_without_orphans(kube: Kube, name: str) -> None:
    kube.kubectl("delete", "br", name, "-n", RUNS_NS, "--wait=true", timeout=120)
    wait_for(lambda: not owned_children(kube, name), 120, f"{name}: every child gone")


def test_requests_larger_than_the_node_are_refused_at_once(kube: Kube) -> None:
    name = session_name("too-big")
    spec = small_spec()
    spec["hardware"]["resources"] = {"requests": {"cpu": "64", "memory": "512Mi"}}
    started = time.monotonic()
    apply_run(kube, name, spec)
    status = wait_phase(kube, name, ("Failed", "Succeeded", "Provisioning"), 60)
    elapsed = time.monotonic() - started
    failed = condition(status, "Failed")
    assert failed["reason"] == "NoNodeFits", status
    (node,) = (kube.get("nodes") or {"items": []})["items"]
    allocatable = node["status"]["allocatable"]["cpu"]
    assert failed["message"].startswith(
        "spec.hardware.resources.requests.cpu: 64 per database pod fits no node of the cluster: "
        f"the largest, {node['metadata']['name']}, has {allocatable} cpu allocatable"
    ), failed["message"]
    assert elapsed < 30, f"refused after {elapsed:.0f}s"
    assert "startedAt" not in status
    assert not any(owned_children(kube, name).get(kind) for kind in RUNNING_KINDS)
    deleted_without_orphans(kube, name)


def test_a_database_pod_the_scheduler_cannot_place_fails_after_the_grace(kube: Kube) -> None:
    name = session_name("nowhere")
    spec = faulty_spec()
    spec["hardware"]["nodeSelector"] = {"dbbench.io/e2e-pool": "absent"}
    apply_run(kube, name, spec)
    seen = reported(kube, name, "Unschedulable")
    first_seen = time.monotonic()
    pod = database_pod(kube, name)
    scheduled = next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")
    assert "didn't match Pod's node affinity/selector" in scheduled["message"]
    assert scheduled["message"] in seen["message"]
    assert warnings(kube, name, "Unschedulable"), "no Warning event while it waited"
    status = fails_after_the_grace(kube, name, "Unschedulable", first_seen)
    assert scheduled["message"] in condition(status, "Failed")["message"]
    deleted_without_orphans(kube, name)


# Not on the node, and its registry (a loopback port nothing listens on) refuses
# the pull: the kubelet tries, fails, backs off. A docker.io reference would make
# the node reach out of this machine, which the tests never do.
MISSING_IMAGE = "127.0.0.1:9/library/mariadb:10.3"
PULL_REASONS = ("ErrImagePull", "ImagePullBackOff")


def test_a_database_image_missing_from_the_node_fails_after_the_grace(kube: Kube) -> None:
    name = session_name("no-image")
    apply_run(kube, name, faulty_spec(image=MISSING_IMAGE))
    seen = reported(kube, name, PULL_REASONS)
    first_seen = time.monotonic()
    assert MISSING_IMAGE in seen["message"]
    assert "connection refused" in seen["message"] or "Back-off pulling image" in seen["message"]
    status = fails_after_the_grace(kube, name, PULL_REASONS, first_seen)
    assert MISSING_IMAGE in condition(status, "Failed")["message"]
    deleted_without_orphans(kube, name)


def test_a_crash_looping_database_fails_after_the_grace_with_its_last_words(kube: Kube) -> None:
    name = session_name("crashing")
    # A typo in a setting the schema cannot check: the server refuses to start.
    settings = {"innodb_buffer_pool_size": "128M", "innodb_flush_method": "bogus"}
    apply_run(kube, name, faulty_spec(settings=settings))
    seen = reported(kube, name, "CrashLoopBackOff")
    first_seen = time.monotonic()
    assert "last exit code" in seen["message"]
    # The server's own last words (terminationMessagePolicy: FallbackToLogsOnError).
    assert "innodb_flush_method" in seen["message"] or "bogus" in seen["message"], seen
    status = fails_after_the_grace(kube, name, "CrashLoopBackOff", first_seen)
    assert "last exit code" in condition(status, "Failed")["message"]
    deleted_without_orphans(kube, name)
