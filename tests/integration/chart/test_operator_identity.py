"""The operator started with the chart's exact command, environment and
ServiceAccount token (a local process: no kubelet here), and the `helm test`
hook's script run against it. Proves the chart's RBAC is enough for kopf."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from dbbench_local.results_service import start_results_service
from tests.fixtures.controlplane import ControlPlane, free_port
from tests.integration.chart.cluster import SYSTEM, TEAM_A, Release, wait_until
from tests.support.helm import env_of, one, operator_container, render

pytestmark = pytest.mark.integration

STREAM = "Starting the watch-stream for"  # kopf's debug line when it opens a watch


def token_of(kubeconfig: Path) -> str:
    token: str = yaml.safe_load(kubeconfig.read_text())["users"][0]["user"]["token"]
    return token


def wait_healthy(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 60.0) -> None:
    def healthy() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"kopf exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                return bool(resp.status == 200)
        except OSError:
            return False

    wait_until(healthy, f"{url} to answer 200", timeout)


@pytest.fixture
def operator_process(
    kube_cluster: ControlPlane, scoped: Release, tmp_path: Path
) -> Iterator[tuple[str, Path, Path]]:
    """kopf started with the chart's command, env and ServiceAccount; yields
    (health URL, log file, ServiceAccount kubeconfig). Stopped by PID."""
    container = operator_container(render(scoped.values, release=scoped.name, namespace=SYSTEM))
    command = container["command"]
    assert command[0] == "kopf"
    assert "--liveness=http://0.0.0.0:8080/healthz" in command
    port = free_port()
    health = f"http://127.0.0.1:{port}/healthz"
    argv = [
        str(Path(sys.executable).parent / "kopf"),
        *(f"--liveness={health}" if arg.startswith("--liveness=") else arg for arg in command[1:]),
        "--verbose",  # debug lines show which watch-streams kopf opens
    ]
    sa_kubeconfig = kube_cluster.service_account_kubeconfig(
        SYSTEM, scoped.service_account, tmp_path / "operator.kubeconfig"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_SERVICE")}
    for name, value in env_of(container).items():
        env[name] = value if isinstance(value, str) else SYSTEM  # fieldRef: metadata.namespace
    env["KUBECONFIG"] = str(sa_kubeconfig)
    log = tmp_path / "kopf.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=tmp_path,
            start_new_session=True,
        )
    try:
        wait_healthy(health, proc, log)
        yield health, log, sa_kubeconfig
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def test_operator_runs_with_chart_rbac_and_helm_test_passes(
    kube_cluster: ControlPlane,
    scoped: Release,
    operator_process: tuple[str, Path, Path],
    tmp_path: Path,
) -> None:
    health, log, sa_kubeconfig = operator_process
    # kopf observes the cluster and opens the watch on the listed namespace only.
    expected = [
        f"{STREAM} customresourcedefinitions.v1.apiextensions.k8s.io cluster-wide",
        f"{STREAM} namespaces.v1 cluster-wide",
        f"{STREAM} benchmarkruns.v1alpha1.dbbench.io in '{TEAM_A}'",
    ]
    wait_until(lambda: all(line in log.read_text() for line in expected), "kopf's watch-streams")
    # The helm test hook's own script, run as its pod would run it: the chart's
    # ServiceAccount token and CA mounted, the apiserver as the in-cluster host.
    hook = one(render(scoped.values, release=scoped.name, namespace=SYSTEM), "Pod")
    hook_container = hook["spec"]["containers"][0]
    sa_dir = tmp_path / "serviceaccount"
    sa_dir.mkdir()
    (sa_dir / "token").write_text(token_of(sa_kubeconfig))
    shutil.copy(kube_cluster.ca, sa_dir / "ca.crt")
    results = start_results_service(tmp_path / "results-service")
    env = {
        "PATH": os.environ["PATH"],
        "DBBENCH_SA_DIR": str(sa_dir),
        "DBBENCH_HEALTH_URL": health,
        "DBBENCH_RESULTS_HEALTH_URL": f"{results.url}/healthz",
        "DBBENCH_CHECK_NAMESPACE": env_of(hook_container)["DBBENCH_CHECK_NAMESPACE"],
        "KUBERNETES_SERVICE_HOST": "127.0.0.1",
        "KUBERNETES_SERVICE_PORT": str(kube_cluster.apiserver_port),
    }
    script = hook_container["command"][2]
    try:
        result = subprocess.run(
            [sys.executable, "-c", script],
            check=False,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        results.stop()
    assert result.returncode == 0, result.stderr
    assert "results service /healthz: ok" in result.stdout
    assert f"list benchmarkruns in {TEAM_A}: ok" in result.stdout
    # A watch refused for lack of rights shows up within the retry delay.
    time.sleep(2)
    # (Not "403": log timestamps carry milliseconds such as ",403".) A 429 "storage is
    # (re)initializing" is the API server still filling its watch cache for a CRD the
    # release has just created (seen once, under load); kopf retries it, and it says
    # nothing about the rights this looks at.
    text = "\n".join(line for line in log.read_text().lower().splitlines()
                     if "storage is (re)initializing" not in line)  # fmt: skip
    for symptom in ("not enough permissions", "forbidden", "will retry", "[warning", "[error"):
        assert symptom not in text, f"kopf logged {symptom!r}:\n{log.read_text()[-3000:]}"


def test_helm_test_script_fails_when_the_operator_is_down(
    kube_cluster: ControlPlane, scoped: Release, tmp_path: Path
) -> None:
    # The hook must not pass vacuously: with nothing listening it fails.
    hook = one(render(scoped.values, release=scoped.name, namespace=SYSTEM), "Pod")
    env = {
        "PATH": os.environ["PATH"],
        "DBBENCH_HEALTH_URL": f"http://127.0.0.1:{free_port()}/healthz",
        "DBBENCH_CHECK_NAMESPACE": TEAM_A,
        "DBBENCH_SA_DIR": str(tmp_path),
        "KUBERNETES_SERVICE_HOST": "127.0.0.1",
        "KUBERNETES_SERVICE_PORT": str(kube_cluster.apiserver_port),
    }
    script = hook["spec"]["containers"][0]["command"][2]
    result = subprocess.run(
        [sys.executable, "-c", script],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "Connection refused" in result.stderr
