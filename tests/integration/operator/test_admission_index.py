"""Admission from memory: a waiting run's passes list neither the runs nor the
nodes (once per resync interval for the whole operator, not once per pass), and
a run that releases its nodes lets the waiting one start without waiting for
the safety net. Against the real control plane, as the chart's ServiceAccount."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from dbbench_contract.api import parse_spec
from dbbench_operator.controller import admission
from dbbench_operator.controller.inventory import INVENTORY
from dbbench_operator.k8s import api
from dbbench_operator.naming import RunRef
from dbbench_operator.settings import OperatorSettings
from tests.fixtures.controlplane import ControlPlane, forget_kube_clients
from tests.integration.operator.test_operator_lifecycle import (
    WATCHED,
    condition,
    get_json,
    operator,
    operator_env,
    phase_of,
    results_service,
    run_manifest,
    wait_for,
)

pytestmark = pytest.mark.integration
__all__ = ["operator_env", "results_service"]  # fixtures, shared with the lifecycle tests

POOL = {"dbbench.io/test-pool": "admission"}
POOL_NODE = "admission-node"


@pytest.fixture
def pool_node(kube_cluster: ControlPlane) -> Iterator[str]:
    """A cordoned Node (no kubelet behind it) with room for a run, alone in its pool."""
    node = {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": POOL_NODE, "labels": POOL}, "spec": {"unschedulable": True},
    }  # fmt: skip
    kube_cluster.kubectl("apply", "-f", "-", input=json.dumps(node))
    size = {"cpu": "8", "memory": "32Gi", "pods": "110"}
    status = json.dumps({"status": {"capacity": size, "allocatable": size}})
    kube_cluster.kubectl("patch", "node", POOL_NODE, "--subresource=status", "--type=merge",
                         "-p", status)  # fmt: skip
    try:
        yield POOL_NODE
    finally:
        kube_cluster.kubectl("delete", "node", POOL_NODE, "--wait=false", check=False)


def no_runs(cluster: ControlPlane, args: list[str]) -> None:
    """Runs other tests left behind hold the node: an exclusive run would wait for them."""
    with operator(args):  # releases their finalizers
        for ns in WATCHED:
            cluster.kubectl("delete", "benchmarkruns", "--all", "-n", ns, "--wait=false")
        wait_for(
            lambda: all(not (get_json(cluster, "benchmarkruns", "-n", ns) or {}).get("items")
                        for ns in WATCHED),
            120, "earlier tests' runs to be deleted",
        )  # fmt: skip


def exclusive_run(cluster: ControlPlane, ns: str, name: str) -> dict[str, Any]:
    """The quickstart, exclusive on the test's own pool."""
    manifest = yaml.safe_load(run_manifest(name, ns))
    manifest["spec"]["hardware"].update(exclusive=True, nodeSelector=POOL)
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(manifest))
    found = get_json(cluster, "benchmarkrun", name, "-n", ns)
    assert found is not None
    return found


@pytest.fixture
def counted_lists(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """The operator's list calls, by kind (the real calls, counted)."""
    calls: Counter[str] = Counter()
    real = api.iter_objects

    def counting(api_version: str, kind: str, *args: Any, **kwargs: Any) -> Any:
        calls[kind] += 1
        return real(api_version, kind, *args, **kwargs)

    monkeypatch.setattr(api, "iter_objects", counting)  # list_objects reads through it
    forget_kube_clients()
    INVENTORY.clear()
    yield calls
    INVENTORY.clear()


def test_waiting_runs_are_admitted_from_memory_not_from_lists_per_pass(
    kube_cluster: ControlPlane, operator_env: list[str], pool_node: str,
    counted_lists: Counter[str],
) -> None:  # fmt: skip
    no_runs(kube_cluster, operator_env)
    holder = exclusive_run(kube_cluster, "team-a", "holder")
    kube_cluster.kubectl("patch", "benchmarkrun", "holder", "-n", "team-a",
                         "--subresource=status", "--type=merge",
                         "-p", '{"status": {"phase": "Running"}}')  # fmt: skip
    waiter = exclusive_run(kube_cluster, "team-b", "waiter")
    ref = RunRef.from_meta(waiter["metadata"])
    spec = parse_spec(waiter["spec"])
    settings = OperatorSettings.from_env()
    counted_lists.clear()
    for _ in range(5):  # five passes of the waiting run
        blocked = admission.blocker(ref, spec, settings)
        assert blocked is not None
        assert blocked[0] == "WaitingForNodes"
        assert f"node(s) {pool_node} exclusively in use by BenchmarkRun team-a/holder" in blocked[1]
        assert admission.misfit(spec, settings) is None
    # One list of the runs (per watched namespace) and one of the nodes, for all five.
    assert counted_lists == Counter({"BenchmarkRun": len(WATCHED), "Node": 1})

    # The watch shows the holder ended and cleaned up: the waiter is admitted at once.
    ended = {**holder, "status": {"phase": "Succeeded", "cleanedUp": True}}
    admission.run_seen(ended, deleted=False)
    assert admission.blocker(ref, spec, settings) is None
    assert counted_lists == Counter({"BenchmarkRun": len(WATCHED), "Node": 1})
    admission.release(ref)


def test_a_run_that_releases_its_nodes_lets_the_waiting_run_start_before_the_safety_net(
    kube_cluster: ControlPlane, operator_env: list[str], pool_node: str
) -> None:
    no_runs(kube_cluster, operator_env)
    exclusive_run(kube_cluster, "team-a", "first")
    with operator(operator_env) as runner:
        wait_for(lambda: phase_of(kube_cluster, "team-a", "first") == "Provisioning", 60,
                 "the first run admitted")  # fmt: skip
        exclusive_run(kube_cluster, "team-b", "second")
        waiting = wait_for(
            lambda: (run := get_json(kube_cluster, "benchmarkrun", "second", "-n", "team-b"))
            and run.get("status", {}).get("conditions") and run,
            60, "the second run to wait",
        )  # fmt: skip
        progressing = condition(waiting, "Progressing")
        assert progressing["reason"] == "WaitingForNodes"
        assert "in use by BenchmarkRun team-a/first" in progressing["message"]
        kube_cluster.kubectl("delete", "benchmarkrun", "first", "-n", "team-a", "--wait=false")
        released = time.monotonic()
        wait_for(lambda: phase_of(kube_cluster, "team-b", "second") == "Provisioning", 60,
                 "the second run admitted")  # fmt: skip
        # Well before the 60 s safety net (with the timer alone: its 1 s interval).
        assert time.monotonic() - released < 30
    assert runner.exception is None, runner.exception
