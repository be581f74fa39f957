"""End-to-end: the chart installed on a real node, BenchmarkRuns applied with kubectl.

The cluster comes from the `local_cluster` fixture (a real single-node cluster,
`make cluster-up`, reused when already up); the chart is installed once per
invocation with helm, as a user installs it.

`make e2e` runs the suite in two phases (hack/e2e.py, docs/testing.md): the
tests not marked `disruptive` at once on several pytest-xdist workers, each
worker a session of its own against the one cluster, then the disruptive ones
alone. What that takes of this module:

- the chart install and the removal of runs an interrupted invocation left
  happen once, in the first worker to get there (`_first_of_the_workers`);
- every run carries its worker's token in its name (`session_name`), and each
  worker deletes only its own runs: a test's leftovers when the test ends, the
  rest when its session ends;
- `apply_run` lowers CPU requests and, in a test not marked `disruptive`,
  refuses an exclusive run and waits (bounded) until the run fits the worker's
  share of the node beside its other runs (tests/e2e/sharing.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from dbbench_contract.api import parse_quantity
from dbbench_contract.durations import parse_duration
from dbbench_local.cluster import IMAGES_DIR
from dbbench_local.install import (
    LOCAL_IMAGES,
    NAMESPACE,
    Kube,
    install_chart,
    node_engine_images,
    wait_for,
    watch_for,
)
from tests.e2e import ordering, sharing
from tests.e2e.sharing import Demand
from tests.e2e.sizes import NEWS_DIVISOR, divided

pytestmark = pytest.mark.e2e

RUNS_NS = "e2e"
# Appended to the names of runs a worker makes for itself: a run of the same
# name left by another session, or made by another worker, is never touched or read.
SESSION_TOKEN = secrets.token_hex(2)
DISRUPTIVE = "disruptive"
# How long a run of the concurrent phase may wait for this worker's earlier runs
# to leave the node before it is refused as too large for the worker's share.
ROOM_WAIT_S = 300


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


class _Worker:
    """This process's part of the node: its share, the runs it applied (name ->
    their requests), whether the test now running is disruptive."""

    def __init__(self) -> None:
        self.kube: Kube | None = None
        self.disruptive = False
        self.allocatable = Demand(parse_quantity("2"), parse_quantity("24Gi"))
        self.share = self.allocatable
        self.applied: dict[str, Demand] = {}

    def measure(self, kube: Kube) -> None:
        """The node's allocatable resources, less the release's own pods, divided
        between the workers of this invocation (1 without xdist)."""
        self.kube = kube
        nodes = (kube.get("nodes") or {"items": []})["items"]
        # Several nodes (`make e2e-placement`, whose tests run alone): the largest.
        have = max((n["status"]["allocatable"] for n in nodes),
                   key=lambda a: parse_quantity(a["cpu"]))  # fmt: skip
        self.allocatable = Demand(parse_quantity(have["cpu"]), parse_quantity(have["memory"]))
        release = Demand()
        for pod in (kube.get("pods", "-n", NAMESPACE) or {"items": []})["items"]:
            for container in pod["spec"]["containers"]:
                release += sharing.pod_requests(container.get("resources"))
        workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
        left = Demand(self.allocatable.cpu - release.cpu, self.allocatable.memory - release.memory)
        self.share = Demand(left.cpu / workers, left.memory / workers)

    def holding(self, kube: Kube, but: str) -> Demand:
        """What this worker's runs other than `but` may still have on the node: every
        run not yet gone, unless it has ended and its databases are gone."""
        total = Demand()
        for name, wanted in list(self.applied.items()):
            run = kube.get("benchmarkrun", name, "-n", RUNS_NS)
            status = (run or {}).get("status") or {}
            if name == but or run is None:
                continue
            if status.get("phase") in ("Succeeded", "Failed") and status.get("cleanedUp"):
                continue
            total += wanted
        return total

    def admit(self, kube: Kube, name: str, spec: dict[str, Any]) -> None:
        """In a concurrent test: refuse an exclusive run, and one larger than the
        worker's share, at once; wait until the run fits the share beside the
        worker's other runs, and refuse it when it never does."""
        alone = sharing.sharing_problems(name, spec, Demand(), self.share, self.allocatable)
        if alone:
            pytest.fail("\n".join(alone), pytrace=False)
        deadline = time.monotonic() + ROOM_WAIT_S
        while True:
            others = self.holding(kube, but=name)
            problems = sharing.sharing_problems(name, spec, others, self.share,
                                                self.allocatable)  # fmt: skip
            if not problems:
                return
            if time.monotonic() > deadline:
                pytest.fail("\n".join(problems), pytrace=False)
            time.sleep(3)


_WORKER = _Worker()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """On an xdist worker (the concurrent phase), the longest tests first."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=lambda item: ordering.rank(item.nodeid))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # Before the test's fixtures: a module fixture's runs are judged as its tests are.
    _WORKER.disruptive = item.get_closest_marker(DISRUPTIVE) is not None


@contextlib.contextmanager
def _first_of_the_workers(tmp_path_factory: pytest.TempPathFactory, what: str) -> Iterator[bool]:
    """True in the one process that should do `what` for the whole invocation (the
    first pytest-xdist worker to get here, or the only process), False in the
    others, which wait here until it is done. A failed attempt leaves it to the
    next worker."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        yield True
        return
    shared = tmp_path_factory.getbasetemp().parent  # this invocation's, all workers'
    with (shared / f"{what}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = shared / f"{what}.done"
        yield not done.exists()
        done.touch()


@pytest.fixture(scope="session")
def kube(local_cluster: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kube]:
    cluster = Kube(local_cluster.kubeconfig)
    with _first_of_the_workers(tmp_path_factory, "e2e-setup") as first:
        if first:
            install_chart(
                cluster,
                ["coldCache.allowPrivilegedPods=true", *LOCAL_IMAGES],
                node_engine_images(),
            )
            cluster.kubectl("create", "namespace", RUNS_NS, check=False)
            # Runs an interrupted invocation left (the node reused from `make
            # cluster-up`) would hold the node pool or be mistaken for this one's.
            # No worker has applied anything yet: they all wait above.
            cluster.kubectl("delete", "benchmarkruns", "--all", "-n", RUNS_NS,
                            "--wait=true", timeout=300)  # fmt: skip
    _WORKER.measure(cluster)
    yield cluster
    # Runs left by a failed test would hold the node for the next session; the
    # other workers' runs are theirs to delete (they may still be running).
    for name in _WORKER.applied:
        with contextlib.suppress(RuntimeError):
            cluster.kubectl("delete", "benchmarkrun", name, "-n", RUNS_NS, "--ignore-not-found",
                            "--wait=false")  # fmt: skip

    def gone() -> bool:
        return not any(cluster.get("benchmarkrun", n, "-n", RUNS_NS) for n in _WORKER.applied)

    with contextlib.suppress(RuntimeError, TimeoutError):
        wait_for(gone, 300, "this worker's runs to go")


@pytest.fixture(autouse=True)
def _own_runs_deleted() -> Iterator[None]:
    """The runs a test applied itself (not its module fixtures') go when it ends,
    passed or not: they would hold this worker's share of the node."""
    before = set(_WORKER.applied)
    yield
    if _WORKER.kube is not None:
        for name in [n for n in _WORKER.applied if n not in before]:
            _WORKER.kube.kubectl("delete", "benchmarkrun", name, "-n", RUNS_NS,
                                 "--ignore-not-found", "--wait=false", check=False)  # fmt: skip


@pytest.fixture(scope="session")
def cold_baseline(kube: Kube) -> Iterator[dict[str, Any]]:
    """examples/field/3-cold-cache-small.yaml, run once per session in a namespace
    enforcing Pod Security baseline, and what was seen while it ran
    (test_tenant.cold_baseline_run). test_tenant.py checks the tenant's side,
    test_field_examples.py the example's results and disk reads: the same run,
    which holds the node alone for minutes, instead of three."""
    from tests.e2e.test_tenant import cold_baseline_run  # noqa: PLC0415 (imports this module)

    with cold_baseline_run(kube) as seen:
        yield seen


FIELD = Path(__file__).resolve().parents[2] / "examples" / "field"
NEWS_ONCE = FIELD / "5-news-crud-with-tags-index-small.yaml"


@pytest.fixture(scope="session")
def news_once(kube: Kube) -> Iterator[dict[str, Any]]:
    """examples/field/5-news-crud-with-tags-index-small.yaml as written
    (exclusive, `cache: coldOnce`, three repeats) but at the suite's size
    (tests/e2e/sizes.py), once per session: {"name", "spec", "status"}.
    test_field_examples.py checks it as an example, test_cold_once.py reads its
    one restart: the same run, which holds the node alone for minutes, instead of
    two."""
    body = yaml.safe_load(NEWS_ONCE.read_text())
    name = session_name(body["metadata"]["name"])
    spec = divided(body["spec"], NEWS_DIVISOR)
    apply_run(kube, name, spec)
    try:
        status = wait_phase(kube, name, ("Succeeded", "Failed"),
                            timeout=parse_duration(spec["timeout"]) + 60)  # fmt: skip
        yield {"name": name, "spec": spec, "status": status}
    finally:
        delete_run(kube, name)


def run_manifest(name: str, spec: dict[str, Any]) -> str:
    return yaml.safe_dump({
        "apiVersion": "dbbench.io/v1alpha1", "kind": "BenchmarkRun",
        "metadata": {"name": name, "namespace": RUNS_NS}, "spec": spec,
    })  # fmt: skip


def apply_run(kube: Kube, name: str, spec: dict[str, Any]) -> str:
    """Create the run afresh and return its uid.

    A run of the same name left by an earlier session is deleted first and its
    children are waited out, so that nothing a test selects by the run's name
    can be a namesake's. Its pods request at most `sharing.SHARED_CPU_REQUEST` of
    CPU each; in a test not marked `disruptive` it must share the node and fit
    the worker's share (`_Worker.admit`).
    """
    spec = admitted_spec(kube, name, spec)
    kube.kubectl("delete", "benchmarkrun", name, "-n", RUNS_NS, "--ignore-not-found",
                 "--wait=true", timeout=300)  # fmt: skip
    wait_for(lambda: not owned_children(kube, name), 300, f"the children of an older {name}")
    _WORKER.applied[name] = sharing.demand(spec, _WORKER.allocatable)
    return create_run_at_once(kube, name, spec)


def create_run_at_once(kube: Kube, name: str, spec: dict[str, Any]) -> str:
    """Create the run now, whatever a deleted namesake left (apply_run waits that
    out); its uid. For a test of a name reused within seconds: the worker's share
    was already admitted for the name by apply_run. (Lowering requests already
    lowered changes nothing.)"""
    spec = sharing.lowered_cpu_requests(spec, _WORKER.allocatable)
    kube.kubectl("create", "-f", "-", stdin=run_manifest(name, spec))
    return run_uid(kube, name)


def admitted_spec(kube: Kube, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    """The spec with its pods' CPU requests lowered and, in a concurrent test,
    admitted to the worker's share (`_Worker.admit`): for apply_run, and for runs
    something other than the test creates one at a time (a BenchmarkSchedule's
    template, `name` its schedule)."""
    spec = sharing.lowered_cpu_requests(spec, _WORKER.allocatable)
    if not _WORKER.disruptive:
        _WORKER.admit(kube, name, spec)
    return spec


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
    """The run's status once its phase is one of `phases` (watched, not polled)."""

    def reached(run: dict[str, Any]) -> dict[str, Any] | None:
        status: dict[str, Any] = run.get("status") or {}
        return status if status.get("phase") in phases else None

    found: dict[str, Any] = watch_for(kube, ("benchmarkrun", name, "-n", RUNS_NS), reached,
                                      timeout, f"run {name} to reach {phases}")  # fmt: skip
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


def results_text(kube: Kube, status: dict[str, Any], relative: str) -> str:
    """A file of the run on the results claim, read inside the results pod."""
    prefix = status["resultsPath"].split("/", 1)[1]  # <claim>/<ns>/<run>/<uid>/
    path = f"/results/{prefix}{relative}"
    return kube.kubectl("exec", "-n", NAMESPACE, "deploy/dbbench-results", "--", "python", "-c",
                        f"print(open({path!r}).read(), end='')").stdout  # fmt: skip


def results_json(kube: Kube, status: dict[str, Any], relative: str) -> Any:
    return json.loads(results_text(kube, status, relative))


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
    """A MariaDB run sized for one 2-core node, sharing it with other runs: a
    `hardware` override that does not say `exclusive` shares it too (an exclusive
    run is for a test marked `disruptive`, which says `exclusive: True`)."""
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
    spec["hardware"] = {"exclusive": False, **spec["hardware"]}
    return spec
