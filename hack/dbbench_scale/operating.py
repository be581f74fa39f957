"""The real operator as a process of ours, installed as the chart installs it:
the CRD, the chart's RBAC (rendered by `helm template`), its ServiceAccount's
token, and the container's command and environment from the chart's
Deployment (only addresses differ: loopback ports of this machine).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from dbbench_local.controlplane import REPO, ControlPlane, tool
from dbbench_local.processes import free_port, stop_pid
from dbbench_local.results_service import ResultsService
from dbbench_scale.apimetrics import flow_schema

OPERATOR_NS = "dbbench-system"
CRD = REPO / "crds" / "benchmarkruns.dbbench.io.yaml"
RBAC_KINDS = {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}


def render_chart(values: dict[str, Any]) -> list[dict[str, Any]]:
    out = subprocess.run(
        [tool("helm"), "template", "dbbench", str(REPO), "--namespace", OPERATOR_NS, "-f", "-"],
        input=json.dumps(values), capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return [doc for doc in yaml.load_all(out, Loader=yaml.CSafeLoader) if doc]


def _container(deployment: dict[str, Any]) -> dict[str, Any]:
    return dict(deployment["spec"]["template"]["spec"]["containers"][0])


def kopf_argv(deployment: dict[str, Any], liveness_port: int) -> list[str]:
    """The chart's command, with kopf from this venv and the probe on loopback."""
    command = [*_container(deployment).get("command", []), *_container(deployment).get("args", [])]
    assert command[0] == "kopf", command
    kopf = str(Path(sys.executable).with_name("kopf"))
    return [kopf, *(f"--liveness=http://127.0.0.1:{liveness_port}/healthz"
                    if a.startswith("--liveness") else a for a in command[1:])]  # fmt: skip


def chart_env(deployment: dict[str, Any]) -> dict[str, str]:
    """The container's plain `value` variables (fieldRef/secretKeyRef are set by us)."""
    return {e["name"]: str(e["value"]) for e in _container(deployment)["env"] if "value" in e}


@dataclass
class Operator:
    process: subprocess.Popen[bytes]
    log: Path
    service_account: str

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        stop_pid(self.process.pid, self.process, 20.0)


def install(plane: ControlPlane) -> tuple[dict[str, Any], str]:
    """CRD, namespace, RBAC and the operator's FlowSchema; (Deployment, ServiceAccount)."""
    plane.kubectl("apply", "--server-side", "-f", str(CRD))
    plane.wait_established("benchmarkruns.dbbench.io")
    plane.kubectl("create", "namespace", OPERATOR_NS)
    docs = render_chart({})
    rbac = [d for d in docs if d["kind"] in RBAC_KINDS]
    plane.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(rbac))
    account = next(d for d in rbac if d["kind"] == "ServiceAccount")["metadata"]["name"]
    plane.kubectl("apply", "-f", "-", input=yaml.safe_dump(flow_schema(OPERATOR_NS, account)))
    return next(d for d in docs if d["kind"] == "Deployment"), account


def start_operator(plane: ControlPlane, workdir: Path, results: ResultsService) -> Operator:
    deployment, account = install(plane)
    kubeconfig = plane.service_account_kubeconfig(OPERATOR_NS, account, workdir / "operator.kc")
    env = {
        **os.environ,
        **chart_env(deployment),
        "KUBECONFIG": str(kubeconfig),
        "DBBENCH_OPERATOR_NAMESPACE": OPERATOR_NS,
        "DBBENCH_RESULTS_URL": results.url,
        "DBBENCH_RESULTS_KEY": results.key.decode(),
        "DBBENCH_HELM": tool("helm"),
        "DBBENCH_METRICS_PORT": str(free_port()),
        "DBBENCH_METRICS_ADDRESS": "127.0.0.1",
    }
    if os.environ.get("SCALE_PROFILE"):  # a sampling profile of the operator (profiling/)
        hook = str(Path(__file__).with_name("profiling"))
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (hook, env.get("PYTHONPATH"))))
    log = workdir / "operator.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            kopf_argv(deployment, free_port()), env=env, stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
    operator = Operator(process, log, account)
    time.sleep(2)
    if not operator.alive():
        raise RuntimeError(f"operator exited: {log.read_text()[-2000:]}")
    return operator
