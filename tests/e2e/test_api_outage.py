"""The kube-apiserver stopped for 30 s in the middle of a run, on the real node.

SIGSTOP, not a kill: every open connection to the API server hangs instead of
being refused, which is the harder case for the operator (each call must time
out on its own) and for the kubelet and the Job controller (they must catch up
afterwards). The run must end, Succeeded or Failed with a reason, within a
bound; it must never hang until its own timeout.

Disruptive: every other test's kubectl calls and runs would hang with it, so
`make e2e` runs it alone (docs/testing.md).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest

from dbbench_contract.summary import StepSummary
from dbbench_local import processes
from dbbench_local.cluster import flavour
from dbbench_local.install import Kube
from dbbench_local.kind import node_process_pid
from tests.e2e.conftest import (
    apply_run,
    delete_run,
    results_json,
    run_status,
    session_name,
    small_spec,
    wait_phase,
)
from tests.e2e.test_failures import LOAD, wait_step_running

pytestmark = [pytest.mark.e2e, pytest.mark.disruptive]

OUTAGE_S = 30
# The step outlasts the freeze (which begins as soon as it runs) by a few seconds.
MIX_S = 45
# After the API server is back: the operator's passes resume (their calls time
# out, none hangs), the step's Job is observed, the results are collected.
BOUND_AFTER_OUTAGE_S = 300


def _api_server_pid(local_cluster: Any) -> int:
    if flavour() == "kind":
        # The static pod's process, a host process under the node container.
        return node_process_pid("kube-apiserver")
    started = {p.name: p for p in processes.load(local_cluster.pid_file)}
    server = started["kube-apiserver"]
    assert processes.is_running(server), "the node's kube-apiserver is not running"
    return server.pid


@pytest.fixture
def frozen_api_server(local_cluster: Any) -> Iterator[tuple[int, list[float]]]:
    """Yields the API server's pid and a list the test fills with freeze times;
    whatever happens, the process is resumed."""
    pid = _api_server_pid(local_cluster)
    frozen: list[float] = []
    try:
        yield pid, frozen
    finally:
        os.kill(pid, signal.SIGCONT)


def test_the_api_server_stopped_for_30s_mid_run_the_run_still_ends(
    kube: Kube, frozen_api_server: tuple[int, list[float]]
) -> None:
    pid, frozen = frozen_api_server
    name = session_name("api-outage")
    mix = {"name": "oltp", "type": "mix", "mix": {"read": 90, "update": 10},
           "duration": f"{MIX_S}s"}  # fmt: skip
    apply_run(kube, name, small_spec(phases=[LOAD, mix]))
    try:
        wait_step_running(kube, name, 2)
        os.kill(pid, signal.SIGSTOP)
        stopped_at = time.monotonic()
        time.sleep(OUTAGE_S)
        os.kill(pid, signal.SIGCONT)
        frozen.append(time.monotonic() - stopped_at)

        status = wait_phase(kube, name, ("Succeeded", "Failed"), BOUND_AFTER_OUTAGE_S)
        ended_after = time.monotonic() - stopped_at
        print(f"API server frozen {frozen[0]:.0f} s; the run ended {status['phase']} "
              f"{ended_after:.0f} s after the freeze began")  # fmt: skip
        if status["phase"] == "Failed":
            # Allowed, but only with a reason a user can act on.
            assert status.get("reason"), status
            assert status.get("message"), status
        else:
            merged = StepSummary.from_wire(results_json(kube, status, "maria/oltp/1/summary.json"))
            assert merged.operations > 0
            assert merged.errors == 0
            # The measured window is the phase's own, not stretched by the outage.
            assert merged.duration_seconds < MIX_S * 1.2, merged.duration_seconds
    finally:
        os.kill(pid, signal.SIGCONT)
        if run_status(kube, name):
            delete_run(kube, name)
