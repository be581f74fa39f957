"""A deleted run's children go when its deletion handler runs, not at the garbage
collector's pace: the operator's own code against the real control plane, as the
chart's ServiceAccount (so the chart's RBAC grants every request it makes).

Two runs in one namespace get children of every kind a run may leave
(`targets/teardown.run_children`), from the operator's own builders and charts and
from the controllers that act on them. The controllers (the garbage collector
among them) are then paused, so whatever goes while `deleted` runs was deleted
by it; the run object still exists throughout, as kopf's finalizer keeps it.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from dbbench_contract.api import parse_spec
from dbbench_operator.controller.reconciling import deleted
from dbbench_operator.k8s import ownership
from dbbench_operator.k8s.api import KubeError
from dbbench_operator.naming import RUN_UID_LABEL, RunRef
from dbbench_operator.settings import OperatorSettings
from dbbench_operator.specs.addresses import target_access
from dbbench_operator.specs.plan import plan
from dbbench_operator.specs.runner_job import (
    JobSettings,
    build_runner_job,
    build_step_config,
    build_step_configmap,
)
from dbbench_operator.targets import provisioning
from dbbench_operator.targets.teardown import run_children
from tests.fixtures.controlplane import ControlPlane, forget_kube_clients
from tests.integration.operator.test_operator_lifecycle import (
    UNWATCHED,
    get_json,
    operator_env,
    results_service,
    run_manifest,
    wait_for,
)

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[3]
__all__ = ["operator_env", "results_service"]  # the module-scoped fixtures, shared

NS = "team-a"
# A sharded MongoDB target makes every kind: StatefulSets (shard, config server)
# with their pods, claims and revisions, the mongos Deployment with its ReplicaSet
# and pods, Services with their EndpointSlices, and the target's NetworkPolicy.
TARGETS = [{"name": "sharded", "engine": "mongodb", "topology": "sharded", "shards": 1,
            "members": 1}]  # fmt: skip
PHASES = [{"name": "load", "type": "insert", "batchSize": 100}]
JOBS = JobSettings(image="example.test/runner:1", pull_policy="IfNotPresent",
                   results_url="http://results.invalid:8080", deadline_seconds=900)  # fmt: skip
# kubectl's names of the kinds, as run_children lists them.
RESOURCES = {
    "StatefulSet": "statefulsets.apps", "Deployment": "deployments.apps", "Job": "jobs.batch",
    "ReplicaSet": "replicasets.apps", "Pod": "pods", "PersistentVolumeClaim": "pvc",
    "ControllerRevision": "controllerrevisions.apps", "Service": "services",
    "EndpointSlice": "endpointslices.discovery.k8s.io", "ConfigMap": "configmaps",
    "Secret": "secrets", "NetworkPolicy": "networkpolicies.networking.k8s.io",
}  # fmt: skip


@pytest.fixture
def as_operator(operator_env: list[str]) -> Iterator[OperatorSettings]:
    """`kube` acts as the chart's ServiceAccount (operator_env's KUBECONFIG)."""
    forget_kube_clients()
    yield OperatorSettings.from_env()
    forget_kube_clients()


def make_run(cluster: ControlPlane, name: str) -> tuple[RunRef, dict[str, Any]]:
    """The run object and its children as a pass makes them: its Secret and plan,
    the target (chart and NetworkPolicy), a runner Job with its step ConfigMap."""
    manifest = run_manifest(name, NS, targets=TARGETS, phases=PHASES,
                            hardware={"storage": {"size": "1Gi"}})  # fmt: skip
    cluster.kubectl("apply", "-f", "-", input=manifest)
    obj = get_json(cluster, "benchmarkrun", name, "-n", NS)
    assert obj is not None
    run, raw = RunRef.from_meta(obj["metadata"]), obj["spec"]
    spec = parse_spec(raw)
    steps = plan(spec)
    provisioning.ensure_run_objects(run, steps, "results-token")
    provisioning.ensure_target(run, spec, 0)
    access = target_access(run, spec, 0)
    config = build_step_config(spec, steps[0], access)
    ownership.apply(build_step_configmap(run, steps[0], config), run)
    ownership.create(build_runner_job(run, spec, steps[0], access, JOBS, database_pods={}), run)
    return run, raw


def children(cluster: ControlPlane, uid: str) -> list[dict[str, Any]]:
    """Every object of the kinds a run leaves that carries the run's uid label."""
    kinds = ",".join(RESOURCES[kind] for _, kind in run_children(None, policies=True))
    listed = get_json(cluster, kinds, "-n", NS, f"-l{RUN_UID_LABEL}={uid}")
    assert listed is not None
    return list(listed["items"])


def every_kind(cluster: ControlPlane, uid: str) -> list[dict[str, Any]]:
    """The run's children once each kind has at least one (the controllers' too)."""
    found = children(cluster, uid)
    wanted = {kind for _, kind in run_children(None, policies=True)}
    return found if wanted <= {c["kind"] for c in found} else []


def described(objs: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {(o["kind"], o["metadata"]["name"], o["metadata"]["uid"]) for o in objs}


def test_a_deleted_runs_children_are_deleted_by_the_handler_not_left_to_the_collector(
    kube_cluster: ControlPlane, as_operator: OperatorSettings
) -> None:
    assert as_operator.network_policies  # the chart's default: every kind is made
    doomed, doomed_spec = make_run(kube_cluster, "deleting-doomed")
    bystander, _ = make_run(kube_cluster, "deleting-bystander")
    wait_for(lambda: every_kind(kube_cluster, doomed.uid), 90, "every kind of child")
    kept = described(wait_for(lambda: every_kind(kube_cluster, bystander.uid), 90,
                              "every kind of the bystander's child"))  # fmt: skip

    controllers = kube_cluster.procs["kube-controller-manager"].pid
    os.kill(controllers, signal.SIGSTOP)
    try:
        deleted(doomed, doomed_spec, as_operator)
        left = children(kube_cluster, doomed.uid)
        bystanders = children(kube_cluster, bystander.uid)
    finally:
        os.kill(controllers, signal.SIGCONT)
    # Nothing the controllers would do, or the collector: only what `deleted` did. Left
    # are objects with finalizers that controllers remove (claims: pvc-protection, Job
    # pods: job-tracking), already being deleted; the rest is gone.
    assert [(o["kind"], o["metadata"]["name"]) for o in left
            if not o["metadata"].get("deletionTimestamp")] == []  # fmt: skip
    assert {o["kind"] for o in left} <= {"PersistentVolumeClaim", "Pod"}, described(left)
    assert get_json(kube_cluster, "benchmarkrun", doomed.name, "-n", NS) is not None
    # Another run's children in the same namespace are untouched.
    assert described(bystanders) == kept
    assert not any(o["metadata"].get("deletionTimestamp") for o in bystanders)
    # With the controllers back, what was being deleted goes, and no controller makes
    # anything again (its owner went first); the run still exists, so no collector.
    wait_for(lambda: not children(kube_cluster, doomed.uid), 60, "the finalized children")
    # A retried handler (kopf retries until it returns) finds nothing and succeeds.
    deleted(doomed, doomed_spec, as_operator)
    assert children(kube_cluster, doomed.uid) == []
    assert described(children(kube_cluster, bystander.uid)) == kept
    for run in (doomed, bystander):
        kube_cluster.kubectl("delete", "benchmarkrun", run.name, "-n", NS, "--wait=false")


def test_a_refused_deletion_raises_so_that_kopf_retries_it(
    kube_cluster: ControlPlane, as_operator: OperatorSettings
) -> None:
    """The handler returning is what releases the finalizer: a request the API server
    refuses (here RBAC: a namespace the operator does not serve) must not."""
    run = RunRef("elsewhere", UNWATCHED, "0f0f0f0f-uid")
    with pytest.raises(KubeError) as refused:
        deleted(run, {}, as_operator)  # an invalid spec: the children still go
    assert refused.value.status == 403
    assert str(refused.value).startswith(f"deletecollection StatefulSet {UNWATCHED}/")


def test_owners_are_deleted_before_what_their_controllers_make() -> None:
    """Else a controller makes again what was just deleted (a StatefulSet its pods)."""
    order = [kind for _, kind in run_children(None, policies=True)]
    made_by = {
        "Pod": ("StatefulSet", "Job", "ReplicaSet"),
        "PersistentVolumeClaim": ("StatefulSet",),
        "ControllerRevision": ("StatefulSet",),
        "ReplicaSet": ("Deployment",),
        "EndpointSlice": ("Service",),
    }
    for made, owners in made_by.items():
        for owner in owners:
            assert order.index(owner) < order.index(made), (owner, made)
    assert len(set(order)) == len(order)
    assert "NetworkPolicy" not in [k for _, k in run_children(None, policies=False)]


def kinds_for(*targets: dict[str, Any]) -> list[str]:
    raw = yaml.safe_load((REPO / "examples" / "quickstart.yaml").read_text())["spec"]
    spec = parse_spec({**raw, "targets": list(targets)})
    return [kind for _, kind in run_children(spec, policies=True)]


def test_a_run_is_asked_only_for_the_kinds_its_spec_deploys() -> None:
    """One request per kind: a run against an external target has no database."""
    external = {"name": "ext", "engine": "mariadb",
                "external": {"uriSecretRef": {"name": "s", "key": "uri"}}}  # fmt: skip
    assert kinds_for(external) == ["Job", "Pod", "ConfigMap", "Secret"]
    deployed = kinds_for({"name": "db", "engine": "mariadb"}, external)
    assert deployed == ["StatefulSet", "Job", "Pod", "PersistentVolumeClaim",
                        "ControllerRevision", "Service", "EndpointSlice", "ConfigMap", "Secret",
                        "NetworkPolicy"]  # fmt: skip
    everything = [kind for _, kind in run_children(None, policies=True)]
    assert kinds_for(*TARGETS) == everything  # sharded MongoDB: the mongos too
    assert len(everything) == len(RESOURCES)
