"""Aggregated roles under real RBAC: namespace editors run benchmarks and schedule them,
viewers read them, and neither reaches the operator's Secrets."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from tests.fixtures.controlplane import ControlPlane
from tests.integration.chart.cluster import SYSTEM, TEAM_A, TEAM_B, Release, wait_until
from tests.support.helm import CHART

pytestmark = pytest.mark.integration

QUICKSTART = CHART / "examples" / "quickstart.yaml"


def quickstart_run(namespace: str, name: str) -> str:
    run = yaml.safe_load(QUICKSTART.read_text())
    run["metadata"] = {"name": name, "namespace": namespace}
    return yaml.safe_dump(run)


def test_namespace_users_get_benchmarkruns_through_aggregated_roles(
    kube_cluster: ControlPlane, scoped: Release, tmp_path: Path
) -> None:
    kubectl = kube_cluster.kubectl
    for user, role in (("alice", "edit"), ("bob", "view")):
        kubectl("create", "serviceaccount", user, "-n", TEAM_A)
        kubectl(
            "create",
            "rolebinding",
            f"{user}-{role}",
            f"--clusterrole={role}",
            f"--serviceaccount={TEAM_A}:{user}",
            "-n",
            TEAM_A,
        )
    kubectl(
        "create",
        "secret",
        "generic",
        "chart-operator-credentials",
        "-n",
        SYSTEM,
        "--from-literal=password=not-for-alice",
    )
    alice = kube_cluster.service_account_kubeconfig(TEAM_A, "alice", tmp_path / "alice")
    bob = kube_cluster.service_account_kubeconfig(TEAM_A, "bob", tmp_path / "bob")

    def as_user(
        who: Path, *args: str, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        return kubectl(*args, check=False, input=stdin, kubeconfig=who)

    # kube-controller-manager folds our roles into edit/view asynchronously.
    def allowed(who: Path, verb: str) -> bool:
        result = as_user(who, "auth", "can-i", verb, "benchmarkruns.dbbench.io", "-n", TEAM_A)
        return result.stdout.strip() == "yes"

    wait_until(lambda: allowed(alice, "create") and allowed(bob, "list"), "role aggregation")

    created = as_user(alice, "apply", "-f", "-", stdin=quickstart_run(TEAM_A, "alice-run"))
    assert created.returncode == 0, created.stderr
    try:
        assert as_user(bob, "get", "br", "alice-run", "-n", TEAM_A).returncode == 0
        denied = [
            (
                "bob creates a run",
                as_user(bob, "apply", "-f", "-", stdin=quickstart_run(TEAM_A, "bob-run")),
            ),
            (
                "alice writes status",
                as_user(
                    alice,
                    "patch",
                    "br",
                    "alice-run",
                    "-n",
                    TEAM_A,
                    "--subresource=status",
                    "--type=merge",
                    "-p",
                    '{"status": {"phase": "Succeeded"}}',
                ),
            ),
            (
                "alice runs outside her namespace",
                as_user(alice, "apply", "-f", "-", stdin=quickstart_run(TEAM_B, "x")),
            ),
            ("alice lists operator secrets", as_user(alice, "get", "secrets", "-n", SYSTEM)),
            (
                "alice reads an operator secret",
                as_user(alice, "get", "secret", "chart-operator-credentials", "-n", SYSTEM),
            ),
        ]
        for what, result in denied:
            assert result.returncode != 0, f"{what}: allowed"
            assert "forbidden" in result.stderr.lower(), f"{what}: {result.stderr}"
    finally:
        deleted = as_user(alice, "delete", "br", "alice-run", "-n", TEAM_A, "--wait=false")
        assert deleted.returncode == 0, deleted.stderr


def test_namespace_users_get_benchmarkschedules_through_aggregated_roles(
    kube_cluster: ControlPlane, scoped: Release, tmp_path: Path
) -> None:
    kubectl = kube_cluster.kubectl
    users = {}
    for user, role in (("carol", "edit"), ("dave", "view")):
        kubectl("create", "serviceaccount", user, "-n", TEAM_A)
        kubectl("create", "rolebinding", f"{user}-{role}", f"--clusterrole={role}",
                f"--serviceaccount={TEAM_A}:{user}", "-n", TEAM_A)  # fmt: skip
        users[user] = kube_cluster.service_account_kubeconfig(TEAM_A, user, tmp_path / user)

    def as_user(who: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return kubectl(*args, check=False, input=stdin, kubeconfig=users[who])

    def allowed(who: str, verb: str) -> bool:
        result = as_user(who, "auth", "can-i", verb, "benchmarkschedules.dbbench.io", "-n", TEAM_A)
        return result.stdout.strip() == "yes"

    wait_until(lambda: allowed("carol", "create") and allowed("dave", "list"), "role aggregation")
    schedule = yaml.safe_load((CHART / "examples" / "schedules" / "nightly.yaml").read_text())
    schedule["metadata"] = {"name": "carol-nightly", "namespace": TEAM_A}
    schedule["spec"]["suspend"] = True  # no operator is needed to see the rights
    created = as_user("carol", "apply", "-f", "-", stdin=yaml.safe_dump(schedule))
    assert created.returncode == 0, created.stderr
    try:
        assert as_user("dave", "get", "bs", "carol-nightly", "-n", TEAM_A).returncode == 0
        schedule["metadata"]["name"] = "dave-nightly"
        denied = [
            ("dave creates a schedule",
             as_user("dave", "apply", "-f", "-", stdin=yaml.safe_dump(schedule))),
            ("carol writes status",
             as_user("carol", "patch", "bs", "carol-nightly", "-n", TEAM_A,
                     "--subresource=status", "--type=merge", "-p", '{"status": {"active": []}}')),
        ]  # fmt: skip
        for what, result in denied:
            assert result.returncode != 0, f"{what}: allowed"
            assert "forbidden" in result.stderr.lower(), f"{what}: {result.stderr}"
    finally:
        deleted = as_user("carol", "delete", "bs", "carol-nightly", "-n", TEAM_A, "--wait=false")
        assert deleted.returncode == 0, deleted.stderr
