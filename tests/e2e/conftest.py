"""End-to-end: the chart installed on a real node, BenchmarkRuns applied with kubectl.

The cluster comes from the `local_cluster` fixture (a real single-node cluster,
`make cluster-up`, reused when already up); the chart is installed once per
session with helm, as a user installs it.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from dbbench_local.cluster import IMAGES_DIR
from dbbench_local.install import (
    LOCAL_IMAGES,
    NAMESPACE,
    Kube,
    install_chart,
    node_engine_images,
    wait_for,
)

pytestmark = pytest.mark.e2e

RUNS_NS = "e2e"
# Appended to the names of runs a module makes for itself: a run of the same
# name left by another session (or another suite) is never touched or read.
SESSION_TOKEN = secrets.token_hex(2)


def session_name(name: str) -> str:
    return f"{name}-{SESSION_TOKEN}"


def node_image(archive: str) -> str:
    """The reference of one of hack/cluster/images.sh's archives (its manifest.txt);
    the kind path pulls official images and has no such manifest."""
    manifest = IMAGES_DIR / "manifest.txt"
    for line in manifest.read_text().splitlines() if manifest.is_file() else []:
        name, _, reference = line.partition(" ")
        if name == archive:
            return reference.strip()
    raise AssertionError(f"{manifest} lists no {archive}: run hack/cluster/images.sh")


@pytest.fixture(scope="session")
def kube(local_cluster: Any) -> Iterator[Kube]:
    cluster = Kube(local_cluster.kubeconfig)
    install_chart(
        cluster, ["coldCache.allowPrivilegedPods=true", *LOCAL_IMAGES], node_engine_images()
    )
    cluster.kubectl("create", "namespace", RUNS_NS, check=False)
    # Runs an interrupted session left (the node reused from `make cluster-up`)
    # would hold the node pool or be mistaken for this session's.
    cluster.kubectl("delete", "benchmarkruns", "--all", "-n", RUNS_NS, "--wait=true",
                    timeout=300)  # fmt: skip
    yield cluster
    # Runs left by a failed test would hold the node pool for the next session.
    with contextlib.suppress(RuntimeError):
        cluster.kubectl("delete", "benchmarkruns", "--all", "-n", RUNS_NS, "--wait=true",
                        timeout=300)  # fmt: skip


def run_manifest(name: str, spec: dict[str, Any]) -> str:
    return yaml.safe_dump({
        "apiVersion": "dbbench.io/v1alpha1", "kind": "BenchmarkRun",
        "metadata": {"name": name, "namespace": RUNS_NS}, "spec": spec,
    })  # fmt: skip


def apply_run(kube: Kube, name: str, spec: dict[str, Any]) -> str:
    """Create the run afresh and return its uid.

    A run of the same name left by an earlier session is deleted first and its
    children are waited out, so that nothing a test selects by the run's name
    can be a namesake's.
    """
    kube.kubectl("delete", "benchmarkrun", name, "-n", RUNS_NS, "--ignore-not-found",
                 "--wait=true", timeout=300)  # fmt: skip
    wait_for(lambda: not owned_children(kube, name), 300, f"the children of an older {name}")
    kube.kubectl("create", "-f", "-", stdin=run_manifest(name, spec))
    return run_uid(kube, name)


def run_uid(kube: Kube, name: str) -> str:
    run = kube.get("benchmarkrun", name, "-n", RUNS_NS)
    assert run is not None, f"no BenchmarkRun {RUNS_NS}/{name}"
    return str(run["metadata"]["uid"])


def owned_by(kube: Kube, kind: str, owner_uid: str, selector: str) -> list[dict[str, Any]]:
    """Objects of ``kind`` matching ``selector`` (ONE comma-joined selector: kubectl
    keeps only the last of several ``-l``) whose owner has the given uid."""
    listed = kube.get(kind, "-n", RUNS_NS, "-l", selector) or {"items": []}
    return [item for item in listed["items"]
            if any(ref.get("uid") == owner_uid
                   for ref in item["metadata"].get("ownerReferences") or [])]  # fmt: skip


def database_pod_objects(
    kube: Kube, name: str, uid: str, chart: str = "mysql"
) -> list[dict[str, Any]]:
    """The live database pods of one engine chart (``mysql`` serves MySQL and
    MariaDB) of this run (uid), never another run's: pods of the StatefulSets
    the run owns."""
    selector = f"dbbench.io/run={name},app.kubernetes.io/name={chart}"
    sets = owned_by(kube, "statefulsets", uid, selector)
    pods = [pod for sts in sets for pod in owned_by(kube, "pods", sts["metadata"]["uid"], selector)]
    live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
    return sorted(live, key=lambda p: str(p["metadata"]["name"]))


def database_pods(kube: Kube, name: str, uid: str, chart: str = "mysql") -> list[str]:
    """Their names, in order (ordinal 0, the primary, first)."""
    return [p["metadata"]["name"] for p in database_pod_objects(kube, name, uid, chart)]


def run_status(kube: Kube, name: str) -> dict[str, Any]:
    run = kube.get("benchmarkrun", name, "-n", RUNS_NS) or {}
    status: dict[str, Any] = run.get("status") or {}
    return status


def delete_run(kube: Kube, name: str, timeout: float = 300) -> None:
    """Deletes the run and waits, bounded, until nothing it owned is left
    (pods, jobs, StatefulSets, Services, Secrets, ConfigMaps, claims)."""
    kube.kubectl("delete", "benchmarkrun", name, "-n", RUNS_NS, "--ignore-not-found",
                 "--wait=true", f"--timeout={int(timeout)}s", timeout=timeout + 30)  # fmt: skip
    wait_for(lambda: not leftovers(kube, name), timeout, f"the objects of run {name} to go")


def leftovers(kube: Kube, name: str) -> list[str]:
    """Everything labelled with the run, and the volumes bound to its claims
    (local-path deletes a claim's volume directory after the claim)."""
    kinds = "pods,jobs,statefulsets,deployments,services,secrets,configmaps,persistentvolumeclaims"
    listed = kube.kubectl("get", kinds, "-n", RUNS_NS, f"-ldbbench.io/run={name}", "-o", "json")
    found = [f"{i['kind']}/{i['metadata']['name']}" for i in json.loads(listed.stdout)["items"]]
    volumes = json.loads(kube.kubectl("get", "persistentvolumes", "-o", "json").stdout)["items"]
    for volume in volumes:
        claim = volume["spec"].get("claimRef") or {}
        if claim.get("namespace") == RUNS_NS and claim.get("name", "").startswith(f"data-{name}-"):
            found.append(f"PersistentVolume/{volume['metadata']['name']}")
    return found


def wait_phase(kube: Kube, name: str, phases: tuple[str, ...], timeout: float) -> dict[str, Any]:
    def reached() -> dict[str, Any] | None:
        status = run_status(kube, name)
        return status if status.get("phase") in phases else None

    found: dict[str, Any] = wait_for(reached, timeout, f"run {name} to reach {phases}")
    return found


def condition(status: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(c for c in status.get("conditions") or [] if c["type"] == kind)


def results_files(kube: Kube, status: dict[str, Any]) -> list[str]:
    """Every file of the run on the results claim, listed inside the results pod."""
    prefix = status["resultsPath"].split("/", 1)[1]  # <claim>/<ns>/<run>/<uid>/
    script = (
        "import os,sys\n"
        f"root = os.path.join('/results', {prefix!r})\n"
        "for d, _, fs in os.walk(root):\n"
        "    for f in fs: print(os.path.relpath(os.path.join(d, f), root))\n"
    )
    out = kube.kubectl("exec", "-n", NAMESPACE, "deploy/dbbench-results", "--",
                       "python", "-c", script).stdout  # fmt: skip
    return sorted(out.split())


def wait_for_report(kube: Kube, status: dict[str, Any], timeout: float = 60) -> list[str]:
    """The run's files once report.html is among them (the results service renders
    it in the background after the run's summary.json arrives), or as they are."""
    deadline = time.monotonic() + timeout
    files = results_files(kube, status)
    while "report.html" not in files and time.monotonic() < deadline:
        time.sleep(2)
        files = results_files(kube, status)
    return files


def results_json(kube: Kube, status: dict[str, Any], relative: str) -> Any:
    prefix = status["resultsPath"].split("/", 1)[1]
    path = f"/results/{prefix}{relative}"
    out = kube.kubectl("exec", "-n", NAMESPACE, "deploy/dbbench-results", "--",
                       "python", "-c", f"print(open({path!r}).read())").stdout  # fmt: skip
    return json.loads(out)


def owned_children(kube: Kube, name: str) -> dict[str, list[str]]:
    kinds = "pods,jobs,statefulsets,deployments,services,secrets,configmaps,persistentvolumeclaims"
    listed = kube.get(kinds, "-n", RUNS_NS, f"-ldbbench.io/run={name}") or {"items": []}
    found: dict[str, list[str]] = {}
    for item in listed["items"]:
        found.setdefault(item["kind"], []).append(item["metadata"]["name"])
    return found


DB_RESOURCES = {"requests": {"cpu": "250m", "memory": "512Mi"},
                "limits": {"cpu": "1", "memory": "512Mi"}}  # fmt: skip
RUNNER_RESOURCES = {"requests": {"cpu": "100m", "memory": "128Mi"},
                    "limits": {"cpu": "1", "memory": "256Mi"}}  # fmt: skip


def small_spec(**overrides: Any) -> dict[str, Any]:
    """A MariaDB run sized for one 2-core node."""
    spec: dict[str, Any] = {
        "targets": [{"name": "maria", "engine": "mariadb",
                     "settings": {"innodb_buffer_pool_size": "128M"}}],
        "hardware": {"resources": DB_RESOURCES, "storage": {"size": "1Gi"}},
        "runner": {"threads": 2, "resources": RUNNER_RESOURCES},
        "dataset": {"shape": "flat45", "records": 5000, "recordSize": 256},
        "phases": [{"name": "load", "type": "insert", "batchSize": 100, "reportEvery": 1000}],
        "timeout": "15m",
    }  # fmt: skip
    spec.update(overrides)
    return spec
