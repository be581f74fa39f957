"""`dbbench list | get | fetch | compare RUN` against the real kube-apiserver, with
BenchmarkRuns whose status is patched as the operator patches it, and files
fetched from a real results browser."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from dbbench_local.controlplane import tool
from tests.fixtures.result_sets import ResultSets
from tests.integration.cli.test_compare import dbbench
from tests.support.browser_server import browser_server
from tests.support.manifests import crd_and_namespace

pytestmark = pytest.mark.integration

NAMESPACE = "dbbench-cli-test"


@pytest.fixture(scope="module")
def cluster(kube_cluster: Any) -> Iterator[Any]:
    with crd_and_namespace(kube_cluster, NAMESPACE, "dbbench-cli-test") as cluster:
        yield cluster


def create_run(cluster: Any, tmp_path: Path, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    # The spec's external targets need the Secret name only at admission.
    manifest = {"apiVersion": "dbbench.io/v1alpha1", "kind": "BenchmarkRun",
                "metadata": {"name": name, "namespace": NAMESPACE}, "spec": spec}  # fmt: skip
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(manifest))
    created = cluster.kubectl("create", "-f", str(path), "-o", "json")
    return dict(json.loads(created.stdout))


def patch_status(cluster: Any, name: str, status: dict[str, Any]) -> None:
    cluster.kubectl(
        "patch", "benchmarkrun", name, "-n", NAMESPACE, "--subresource=status",
        "--type=merge", "-p", json.dumps({"status": status}),
    )  # fmt: skip


def status_from(run_dir: Path, phase: str, uid: str) -> dict[str, Any]:
    """The status the operator records for a finished run: its step results per target."""
    summary = json.loads((run_dir / "summary.json").read_text())
    targets: dict[str, list[dict[str, Any]]] = {}
    for step in summary["steps"]:
        targets.setdefault(step["target"], []).append(step["result"])
    return {
        "phase": phase,
        "resultsPath": f"dbbench-results/{NAMESPACE}/x/{uid}/",
        "targets": [{"name": t, "phases": p} for t, p in targets.items()],
    }


def kube(cluster: Any, *args: str) -> Any:
    return dbbench("--kubeconfig", str(cluster.kubeconfig), "-n", NAMESPACE, *args)


def test_list_get_fetch_and_compare_runs(
    cluster: Any, result_sets: ResultSets, tmp_path: Path
) -> None:
    claim = tmp_path / "claim"
    runs = {}
    for name, source in (("baseline", result_sets.baseline), ("candidate", result_sets.candidate)):
        created = create_run(cluster, tmp_path, name, source.spec)
        uid = created["metadata"]["uid"]
        runs[name] = uid
        # The claim as the results service keeps it: <namespace>/<run>/<uid>/.
        shutil.copytree(source.path, claim / NAMESPACE / name / uid)
        patch_status(cluster, name, status_from(source.path, "Succeeded", uid))
    create_run(cluster, tmp_path, "unfinished", result_sets.baseline.spec)
    patch_status(cluster, "unfinished", {"phase": "Running"})

    listed = kube(cluster, "list")
    assert listed.returncode == 0, listed.stderr
    lines = [line.split() for line in listed.stdout.splitlines()]
    assert lines[0] == ["NAMESPACE", "NAME", "PHASE", "TARGETS", "PROGRESS", "AGE"]
    assert {tuple(line[1:4]) for line in lines[1:]} == {
        ("baseline", "Succeeded", "safe,fast"),
        ("candidate", "Succeeded", "safe,fast"),
        ("unfinished", "Running", "safe,fast"),
    }

    got = kube(cluster, "get", "baseline")
    assert got.returncode == 0, got.stderr
    assert "Run phase: Succeeded" in got.stdout
    table = [line.split() for line in got.stdout.splitlines() if line.startswith(("safe", "fast"))]
    assert len(table) == 10
    summary = json.loads((result_sets.baseline.path / "summary.json").read_text())
    first = summary["steps"][0]["result"]  # safe/load/1 as the status rounds it
    assert table[0][:4] == ["safe", "load", "1", "succeeded"]
    assert table[0][4] == f"{first['operations']:,}"
    assert table[0][5] == "-"  # NOT FOUND: a load looks nothing up
    assert table[0][6] == f"{first['throughput']:,.1f}"
    assert table[0][8] == f"{first['latencyMs']['p99']:,.3f}"
    # Every reading step found what it read: NOT FOUND 0, the status's count.
    looked_up = [(row, s["result"]) for row, s in zip(table, summary["steps"], strict=True)
                 if s["type"] != "insert"]  # fmt: skip
    assert looked_up
    for row, result in looked_up:
        assert (row[5], result["notFound"]) == ("0", 0), row

    with browser_server(claim, tmp_path / "browser.log") as url:
        out = tmp_path / "fetched"
        fetched = kube(cluster, "--url", url, "fetch", "baseline", "--out", str(out))
        assert fetched.returncode == 0, fetched.stderr
        files = [p for p in result_sets.baseline.path.rglob("*") if p.is_file()]
        assert files
        for path in files:
            relative = path.relative_to(result_sets.baseline.path)
            assert (out / relative).read_bytes() == path.read_bytes(), relative
        by_name = kube(cluster, "--url", url, "compare", "baseline", "candidate")
        by_dir = dbbench("compare", str(result_sets.baseline.path), str(result_sets.candidate.path))
        assert by_name.returncode == 0, by_name.stderr
        assert by_name.stdout == by_dir.stdout

        unfinished = kube(
            cluster, "--url", url, "fetch", "unfinished", "--out", str(tmp_path / "u")
        )
        assert unfinished.returncode == 1
        assert "run unfinished is Running" in unfinished.stderr
    unknown = kube(cluster, "get", "nosuchrun")
    assert unknown.returncode == 1
    assert f"no BenchmarkRun 'nosuchrun' in namespace '{NAMESPACE}'" in unknown.stderr
    unreachable = kube(cluster, "--url", "http://127.0.0.1:9", "fetch", "baseline", "--out",
                       str(tmp_path / "x"))  # fmt: skip
    assert unreachable.returncode == 1
    assert "cannot reach the results browser" in unreachable.stderr


def test_kubectl_finds_the_plugin(cluster: Any, tmp_path: Path) -> None:
    """`kubectl dbbench` runs the installed `kubectl-dbbench` (kubectl's plugin lookup)."""
    spec = {"targets": [{"name": "db", "engine": "mariadb"}],
            "phases": [{"name": "load", "type": "insert"}]}  # fmt: skip
    create_run(cluster, tmp_path, "plugin-run", spec)
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}  # fmt: skip
    kubectl = tool("kubectl")
    result = subprocess.run([kubectl, "dbbench", "list", "-n", NAMESPACE], env=env,
                            capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert any(line.split()[1:3] == ["plugin-run", "Pending"]
               for line in result.stdout.splitlines()[1:])  # fmt: skip
