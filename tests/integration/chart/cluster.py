"""Installing the chart into the shared control plane and asking it questions.

There is no kubelet in this control plane, so pods never run: installs use
`--wait=false` and nothing waits for readiness. Names carry a "chart-" prefix
because the control plane is shared by the whole session.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.fixtures.controlplane import ControlPlane
from tests.support.helm import CHART, helm, values_args

SYSTEM, TEAM_A, TEAM_B = "chart-system", "chart-team-a", "chart-team-b"


@dataclass(frozen=True)
class Release:
    name: str
    namespace: str
    values: dict[str, Any]
    crd_existed_before: bool

    @property
    def service_account(self) -> str:
        return f"{self.name}-dbbench"

    @property
    def identity(self) -> str:
        return f"system:serviceaccount:{self.namespace}:{self.service_account}"


def ensure_namespace(cluster: ControlPlane, name: str) -> None:
    manifest = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(manifest))


def crd_exists(cluster: ControlPlane) -> bool:
    result = cluster.kubectl("get", "crd", "benchmarkruns.dbbench.io", check=False)
    return result.returncode == 0


def wait_until(check: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def install(
    cluster: ControlPlane, release: str, namespace: str, values: dict[str, Any], workdir: Path
) -> Release:
    existed = crd_exists(cluster)
    helm(
        "install",
        release,
        str(CHART),
        "--namespace",
        namespace,
        "--wait=false",
        *values_args(values, workdir),
        kubeconfig=cluster.kubeconfig,
    )
    installed = Release(release, namespace, values, existed)
    # The apiserver's RBAC authorizer learns new bindings from its informer a
    # moment after helm returns; wait for them, as a user would, before tests
    # (or kopf) act as the ServiceAccount.
    watched = values.get("watchNamespaces") or []
    scope = ["-n", watched[0]] if watched else ["-A"]
    wait_until(
        lambda: (
            can_i(cluster, installed.identity, "watch", "benchmarkruns.dbbench.io", *scope)
            and can_i(cluster, installed.identity, "watch", "customresourcedefinitions")
        ),
        f"RBAC of release {release}",
    )
    return installed


def get(cluster: ControlPlane, *args: str) -> dict[str, Any]:
    obj: dict[str, Any] = yaml.safe_load(cluster.kubectl("get", *args, "-o", "yaml").stdout)
    return obj


def can_i(cluster: ControlPlane, who: str, *args: str) -> bool:
    result = cluster.kubectl("auth", "can-i", *args, f"--as={who}", check=False)
    return result.stdout.strip() == "yes"
