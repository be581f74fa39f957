"""`dbbench fetch | report | compare RUN` with nothing enabled or forwarded by hand:
through the real kube-apiserver's service proxy to a real results browser
process, as the user the kubeconfig names, under real RBAC from the chart.

The API server proxies only to an address of a pod behind the Service's
Endpoints (never loopback), so the browser listens on a /32 address this test
puts on `lo` (198.18.0.0/15, the benchmarking range, as the local node does)
and removes; the pod is an API object only (scheduling-gated, its status
patched with that address), the Endpoints point at it. The Service, its
annotations, the results-reader Role, the rbac.resultsReaders binding and the
aggregated roles are the chart's, rendered by helm.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from dbbench_local import hostnet
from dbbench_report import write_report
from tests.fixtures.result_sets import ResultSets
from tests.integration.cli.test_compare import dbbench
from tests.support.browser_server import browser_server
from tests.support.helm import render
from tests.support.manifests import crd_and_namespace

pytestmark = pytest.mark.integration

RUNS = "dbbench-proxy-runs"  # where the BenchmarkRuns are
RELEASE_NS = "dbbench-proxy-release"  # the chart's namespace: its results browser
RELEASE = "proxytest"
BROWSER = f"{RELEASE}-dbbench-browser"
READER_ROLE = f"{RELEASE}-dbbench-results-reader"
# One address per test process: two sessions on one machine do not share it.
ADDRESS = f"198.18.201.{os.getpid() % 250 + 2}"


@dataclass(frozen=True)
class Proxied:
    cluster: Any
    uids: dict[str, str]
    tmp: Path


def apply(cluster: Any, objects: list[dict[str, Any]]) -> None:
    path = cluster.workdir / f"apply-{time.monotonic_ns()}.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    cluster.kubectl("apply", "-f", str(path))


def chart_objects(readers: list[dict[str, str]] | None = None) -> list[dict[str, Any]]:
    values: dict[str, Any] = {"rbac": {"resultsReaders": readers or []}}
    manifests = render(values, release=RELEASE, namespace=RELEASE_NS)
    wanted = {("Service", BROWSER), ("Role", READER_ROLE),
              ("RoleBinding", f"{RELEASE}-dbbench-results-readers"),
              ("ClusterRole", f"{RELEASE}-dbbench-view"),
              ("ClusterRole", f"{RELEASE}-dbbench-edit")}  # fmt: skip
    return [m for m in manifests if (m["kind"], m["metadata"]["name"]) in wanted]


def backend(cluster: Any, port: int) -> None:
    """The browser's Service without a selector, a pod object holding ADDRESS and
    the Endpoints naming it: what the endpoints controller would make of a running pod."""
    service = next(m for m in chart_objects() if m["kind"] == "Service")
    del service["spec"]["selector"]
    service["spec"]["ports"][0]["targetPort"] = port
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": f"{RELEASE}-results", "namespace": RELEASE_NS},
           "spec": {"schedulingGates": [{"name": "dbbench.io/never"}],
                    "containers": [{"name": "browser", "image": "none"}]}}  # fmt: skip
    apply(cluster, [service, pod])
    cluster.kubectl(
        "patch", "pod", f"{RELEASE}-results", "-n", RELEASE_NS, "--subresource=status",
        "--type=merge", "-p",
        json.dumps({"status": {"podIP": ADDRESS, "podIPs": [{"ip": ADDRESS}]}}),
    )  # fmt: skip
    endpoints = {"apiVersion": "v1", "kind": "Endpoints",
                 "metadata": {"name": BROWSER, "namespace": RELEASE_NS},
                 "subsets": [{"addresses": [{"ip": ADDRESS, "targetRef": {
                     "kind": "Pod", "name": f"{RELEASE}-results", "namespace": RELEASE_NS}}],
                     "ports": [{"name": "http", "port": port, "protocol": "TCP"}]}]}  # fmt: skip
    apply(cluster, [endpoints])


def finished_run(cluster: Any, tmp: Path, name: str, run_dir: Path, spec: dict[str, Any]) -> str:
    manifest = {"apiVersion": "dbbench.io/v1alpha1", "kind": "BenchmarkRun",
                "metadata": {"name": name, "namespace": RUNS}, "spec": spec}  # fmt: skip
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(manifest))
    uid = json.loads(cluster.kubectl("create", "-f", str(path), "-o", "json").stdout)["metadata"][
        "uid"
    ]
    status = {"phase": "Succeeded", "resultsPath": f"dbbench-results/{RUNS}/{name}/{uid}/"}
    cluster.kubectl("patch", "benchmarkrun", name, "-n", RUNS, "--subresource=status",
                    "--type=merge", "-p", json.dumps({"status": status}))  # fmt: skip
    return str(uid)


@pytest.fixture(scope="module")
def proxied(
    kube_cluster: Any, result_sets: ResultSets, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Proxied]:
    tmp = tmp_path_factory.mktemp("proxy")
    added = hostnet.add_address(ADDRESS)
    try:
        with crd_and_namespace(kube_cluster, RUNS, "dbbench-proxy-test") as cluster:
            cluster.kubectl("create", "namespace", RELEASE_NS)
            try:
                uids = {}
                for name, source in (("baseline", result_sets.baseline),
                                     ("candidate", result_sets.candidate)):  # fmt: skip
                    uids[name] = finished_run(cluster, tmp, name, source.path, source.spec)
                    claimed = tmp / "claim" / RUNS / name / uids[name]
                    shutil.copytree(source.path, claimed)
                    write_report(claimed)  # as the results service renders it
                with browser_server(tmp / "claim", tmp / "browser.log", host=ADDRESS) as url:
                    apply(cluster, [m for m in chart_objects() if m["kind"] != "Service"])
                    backend(cluster, int(url.rsplit(":", 1)[1]))
                    yield Proxied(cluster, uids, tmp)
            finally:
                cluster.kubectl("delete", "namespace", RELEASE_NS, "--wait=false", check=False)
                cluster.kubectl(
                    "delete", "clusterrole", f"{RELEASE}-dbbench-view", f"{RELEASE}-dbbench-edit",
                    "--ignore-not-found", check=False,
                )  # fmt: skip
    finally:
        if added:
            hostnet.remove_address(ADDRESS)


def as_user(
    kubeconfig: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The CLI as the kubeconfig's user, with no DBBENCH_* from the caller's environment."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("DBBENCH_")}
    return subprocess.run(
        [sys.executable, "-m", "dbbench_cli", "--kubeconfig", str(kubeconfig), "-n", RUNS, *args],
        capture_output=True, text=True, timeout=120, check=False, env={**clean, **(env or {})},
    )  # fmt: skip


def test_fetch_report_and_compare_through_the_api_server(
    proxied: Proxied, result_sets: ResultSets
) -> None:
    """The admin (may list Services everywhere): the browser is found by its label."""
    admin = proxied.cluster.kubeconfig
    out = proxied.tmp / "fetched"
    fetched = as_user(admin, "fetch", "baseline", "--out", str(out))
    assert fetched.returncode == 0, fetched.stderr
    claimed = proxied.tmp / "claim" / RUNS / "baseline" / proxied.uids["baseline"]
    files = [p for p in claimed.rglob("*") if p.is_file()]
    assert len(files) > 20
    assert (claimed / "report.html") in files
    for path in files:  # byte for byte, report.html included (no proxy rewriting)
        relative = path.relative_to(claimed)
        assert (out / relative).read_bytes() == path.read_bytes(), relative
    (out / "report.html").unlink()
    reported = dbbench("report", str(out))
    assert reported.returncode == 0, reported.stderr
    assert (out / "report.html").is_file()
    by_name = as_user(admin, "compare", "baseline", "candidate")
    by_dir = dbbench("compare", str(result_sets.baseline.path), str(result_sets.candidate.path))
    assert by_name.returncode == 0, by_name.stderr
    assert by_name.stdout == by_dir.stdout


def service_account(cluster: Any, tmp: Path, name: str, *bindings: tuple[str, ...]) -> Path:
    cluster.kubectl("create", "serviceaccount", name, "-n", RUNS)
    for namespace, *role in bindings:
        cluster.kubectl("create", "rolebinding", f"{name}-{role[-1].split('=')[-1]}", *role,
                        f"--serviceaccount={RUNS}:{name}", "-n", namespace)  # fmt: skip
    return Path(cluster.service_account_kubeconfig(RUNS, name, tmp / f"{name}.kubeconfig"))


def wait_allowed(cluster: Any, who: Path, *check: str) -> None:
    """Aggregation and RBAC caches settle within seconds."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if cluster.kubectl("auth", "can-i", *check, check=False, kubeconfig=who).returncode == 0:
            return
        time.sleep(0.5)
    raise AssertionError(f"{who.name} never got {check}")


def test_rbac_decides_and_errors_name_the_service_and_the_fix(proxied: Proxied) -> None:
    cluster, tmp = proxied.cluster, proxied.tmp
    cluster.kubectl("create", "role", "list-services", "--verb=get,list", "--resource=services",
                    "-n", RELEASE_NS)  # fmt: skip
    # erin reads runs in her namespace and may list Services in the chart's, no more.
    erin = service_account(cluster, tmp, "erin", (RUNS, "--clusterrole=view"),
                           (RELEASE_NS, "--role=list-services"))  # fmt: skip
    wait_allowed(cluster, erin, "list", "services", "-n", RELEASE_NS)
    out = str(tmp / "erin")
    # She may not list Services cluster-wide: the browser is looked for in her
    # namespace and dbbench-system only, and the error says what to do.
    lost = as_user(erin, "fetch", "baseline", "--out", out)
    assert lost.returncode == 1
    assert (
        "no results browser Service (label app.kubernetes.io/component=results-browser)"
        in lost.stderr
    )
    assert "could not list Services in all namespaces (403)" in lost.stderr
    assert "--results-namespace" in lost.stderr
    refused = as_user(erin, "--results-namespace", RELEASE_NS, "fetch", "baseline", "--out", out)
    assert refused.returncode == 1
    for words in (f"svc/{BROWSER} in namespace {RELEASE_NS}", "services/proxy",
                  f"--role={READER_ROLE}", "rbac.resultsReaders"):  # fmt: skip
        assert words in refused.stderr, refused.stderr
    assert not (tmp / "erin").exists() or not any((tmp / "erin").iterdir())
    # The fix the message names: the chart's value binds her to the reader Role.
    readers = [{"kind": "ServiceAccount", "name": "erin", "namespace": RUNS}]
    apply(cluster, [m for m in chart_objects(readers) if m["kind"] == "RoleBinding"])
    wait_allowed(
        cluster, erin, "get", f"services/{BROWSER}:http", "--subresource=proxy", "-n", RELEASE_NS
    )
    allowed = as_user(erin, "fetch", "baseline", "--out", out,
                      env={"DBBENCH_RESULTS_NAMESPACE": RELEASE_NS})  # fmt: skip
    assert allowed.returncode == 0, allowed.stderr
    assert (tmp / "erin" / "summary.json").is_file()


def test_view_in_the_chart_namespace_reads_results_through_the_aggregated_role(
    proxied: Proxied,
) -> None:
    """The built-in `view` role gains services/proxy on the browser alone (our
    aggregated <fullname>-view); it gains nothing on other Services."""
    cluster, tmp = proxied.cluster, proxied.tmp
    vera = service_account(cluster, tmp, "vera", (RUNS, "--clusterrole=view"),
                           (RELEASE_NS, "--clusterrole=view"))  # fmt: skip
    wait_allowed(
        cluster, vera, "get", f"services/{BROWSER}:http", "--subresource=proxy", "-n", RELEASE_NS
    )
    other = cluster.kubectl("auth", "can-i", "get", "services/other", "--subresource=proxy",
                            "-n", RELEASE_NS, check=False, kubeconfig=vera)  # fmt: skip
    assert other.returncode != 0
    fetched = as_user(vera, "--results-namespace", RELEASE_NS, "fetch", "candidate", "--out",
                      str(tmp / "vera"))  # fmt: skip
    assert fetched.returncode == 0, fetched.stderr
    assert (tmp / "vera" / "summary.json").is_file()


def test_a_browser_without_endpoints_is_named(proxied: Proxied) -> None:
    """The results pod not ready: its Endpoints hold no address (503 from the proxy)."""
    cluster = proxied.cluster
    saved = cluster.kubectl("get", "endpoints", BROWSER, "-n", RELEASE_NS, "-o", "json").stdout
    cluster.kubectl("patch", "endpoints", BROWSER, "-n", RELEASE_NS, "--type=json",
                    "-p", '[{"op": "remove", "path": "/subsets"}]')  # fmt: skip
    try:
        answer = as_user(cluster.kubeconfig, "fetch", "baseline", "--out", str(proxied.tmp / "n"))
        assert answer.returncode == 1
        assert f"svc/{BROWSER} in namespace {RELEASE_NS} has no ready endpoint" in answer.stderr
        assert "get pods -l app.kubernetes.io/component=results" in answer.stderr
    finally:
        restored = json.loads(saved)
        for key in ("resourceVersion", "uid", "creationTimestamp", "managedFields"):
            restored["metadata"].pop(key, None)
        apply(cluster, [restored])


def test_a_browser_the_api_server_cannot_connect_to_names_the_network_policy_value(
    proxied: Proxied,
) -> None:
    """Endpoints whose port nothing listens on: what a NetworkPolicy that drops the
    control plane's connections looks like from the CLI (the proxy cannot connect)."""
    cluster = proxied.cluster
    saved = cluster.kubectl("get", "endpoints", BROWSER, "-n", RELEASE_NS, "-o", "json").stdout
    closed = '[{"op": "replace", "path": "/subsets/0/ports/0/port", "value": 1}]'
    cluster.kubectl("patch", "endpoints", BROWSER, "-n", RELEASE_NS, "--type=json", "-p", closed)
    try:
        answer = as_user(cluster.kubeconfig, "fetch", "baseline", "--out", str(proxied.tmp / "c"))
        assert answer.returncode == 1
        assert f"could not connect to svc/{BROWSER}" in answer.stderr, answer.stderr
        assert "networkPolicy.browserFrom" in answer.stderr
    finally:
        restored = json.loads(saved)
        for key in ("resourceVersion", "uid", "creationTimestamp", "managedFields"):
            restored["metadata"].pop(key, None)
        apply(cluster, [restored])
