"""kopf keeps each run's latest body for the run's loop; the operator drops the
body's managedFields before kopf keeps it (`controller/kept_bodies`), through kopf itself and a
real kube-apiserver."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from dbbench_operator import handlers
from tests.fixtures.controlplane import ControlPlane
from tests.integration.operator.test_operator_lifecycle import (
    operator,
    operator_env,
    results_service,
    run_manifest,
    wait_for,
)

__all__ = ["operator_env", "results_service"]  # fixtures, shared with the lifecycle tests


def test_the_body_kopf_keeps_for_a_runs_loop_has_no_managed_fields(
    kube_cluster: ControlPlane, operator_env: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    kept: dict[str, Mapping[str, Any]] = {}  # by run name: other tests' runs may be there

    async def loop_that_only_keeps_its_body(body: Mapping[str, Any], stopped: Any, *_: Any) -> None:
        kept[body["metadata"]["name"]] = body  # kopf's live body: it follows the watch
        while not stopped:
            await asyncio.sleep(0.1)

    monkeypatch.setattr(handlers, "drive", loop_that_only_keeps_its_body)
    ns, name = "team-a", "bodies"
    kube_cluster.kubectl("apply", "-f", "-", input=run_manifest(name, ns))
    try:
        with operator(operator_env):
            wait_for(lambda: name in kept, 60, "the run's loop")
            # A change the watch shows: kopf replaces the live body with the new one.
            kube_cluster.kubectl("label", "benchmarkrun", name, "-n", ns, "seen=yes")
            body = kept[name]
            wait_for(lambda: (body["metadata"].get("labels") or {}).get("seen"), 30, "label")
            # kopf swaps the event's object in as the live body before its event
            # handlers run, and `run_seen` then drops the fields from that same
            # object: this thread may look in between, so it gives that a moment.
            wait_for(lambda: "managedFields" not in body["metadata"], 5,
                     "managedFields dropped from the kept body")  # fmt: skip
            assert "kubectl.kubernetes.io/last-applied-configuration" not in (
                body["metadata"].get("annotations") or {})  # fmt: skip
            assert "dbbench.io/last-handled-configuration" in body["metadata"]["annotations"]
            stored = kube_cluster.kubectl(
                "get", "benchmarkrun", name, "-n", ns, "--show-managed-fields", "-o", "json"
            ).stdout
            assert '"managedFields"' in stored  # the API server has them; only kopf's copy is slim
    finally:
        kube_cluster.kubectl("delete", "benchmarkrun", name, "-n", ns, "--wait=false")
