"""The operator against the real control plane, acting as the chart's own ServiceAccount.

RBAC, the namespace list and the kopf command line all come from `helm template`
of the repository's chart, so this exercises what a user installs: a missing
permission fails here, not in their cluster.
"""

from __future__ import annotations

import base64
import json
import os
import time
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml

from dbbench_contract.run_summary import RunSummary
from dbbench_local.results_service import ResultsService, start_results_service
from dbbench_operator.targets import provisioning
from tests.fixtures.controlplane import REPO, ControlPlane, free_port
from tests.fixtures.mariadb import MariaDBServer
from tests.support import helm, kube_get
from tests.support.manifests import wait_established

pytestmark = pytest.mark.integration

OPERATOR_NS = "dbbench-system"
WATCHED = ("team-a", "team-b")
UNWATCHED = "team-c"
CRD = REPO / "crds" / "benchmarkruns.dbbench.io.yaml"
RBAC_KINDS = {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}


def render_chart(values: dict[str, Any]) -> list[dict[str, Any]]:
    return helm.render(values, namespace=OPERATOR_NS)


def kopf_args(deployment: dict[str, Any], liveness_port: int) -> list[str]:
    """The operator container's command as the chart renders it, minus `kopf`."""
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    argv = [*container.get("command", []), *container.get("args", [])]
    assert argv[0] == "kopf", argv
    # Same command, but the probe binds loopback: tests listen on nothing else.
    return [
        f"--liveness=http://127.0.0.1:{liveness_port}/healthz" if a.startswith("--liveness") else a
        for a in argv[1:]
    ]


def wait_for(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def get_json(cluster: ControlPlane, *args: str) -> dict[str, Any] | None:
    """`kubectl get *args -o json`, or None where kubectl fails; the plain forms the
    tests poll are read over the API from this process (tests/support/kube_get.py)."""
    handled, found = kube_get.read(cluster, args)
    if handled:
        return found
    result = cluster.kubectl("get", *args, "-o", "json", check=False)
    return json.loads(result.stdout) if result.returncode == 0 else None


def run_manifest(name: str, namespace: str, **overrides: Any) -> str:
    base = yaml.safe_load((REPO / "examples" / "quickstart.yaml").read_text())
    base["metadata"] = {"name": name, "namespace": namespace}
    base["spec"].update(overrides)
    return yaml.safe_dump(base)


@pytest.fixture(scope="module")
def results_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ResultsService]:
    service = start_results_service(tmp_path_factory.mktemp("results"))
    try:
        yield service
    finally:
        service.stop()


@pytest.fixture(scope="module")
def operator_env(
    kube_cluster: ControlPlane,
    tmp_path_factory: pytest.TempPathFactory,
    results_service: ResultsService,
) -> Iterator[list[str]]:
    """CRD + chart RBAC installed; KUBECONFIG acts as the operator's ServiceAccount."""
    kube_cluster.kubectl("apply", "--server-side", "-f", str(CRD))
    wait_established(kube_cluster)  # `kubectl wait` fails while the CRD has no status yet
    for ns in (OPERATOR_NS, *WATCHED, UNWATCHED):
        kube_cluster.kubectl("create", "namespace", ns, check=False)
    # cache: cold allowed, so the Role for cache-drop Jobs in the release namespace is
    # exercised by the real API server too.
    docs = render_chart(
        {"watchNamespaces": list(WATCHED), "coldCache": {"allowPrivilegedPods": True}}
    )
    rbac = [d for d in docs if d["kind"] in RBAC_KINDS]
    kube_cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(rbac))
    sa = next(d for d in rbac if d["kind"] == "ServiceAccount")["metadata"]["name"]
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    kubeconfig = kube_cluster.service_account_kubeconfig(
        OPERATOR_NS, sa, tmp_path_factory.mktemp("operator") / "kubeconfig"
    )
    service = results_service
    chart_env = {e["name"]: e.get("value") for e in
                 deployment["spec"]["template"]["spec"]["containers"][0]["env"]}  # fmt: skip
    env = {
        # As the chart sets them: per-target NetworkPolicies, the operator pod's labels.
        "DBBENCH_NETWORK_POLICIES": chart_env["DBBENCH_NETWORK_POLICIES"],
        "DBBENCH_OPERATOR_POD_LABELS": chart_env["DBBENCH_OPERATOR_POD_LABELS"],
        "DBBENCH_ALLOW_CACHE_DROP": chart_env["DBBENCH_ALLOW_CACHE_DROP"],
        "KUBECONFIG": str(kubeconfig),
        # The chart's pacing, but polled waits every second (fast tests). DBBENCH_EVENTS
        # in the tests' own environment picks the mode: `make test-timer` runs these
        # tests with the timer alone (no watches of the runs' children).
        "DBBENCH_EVENTS": os.environ.get("DBBENCH_EVENTS", chart_env["DBBENCH_EVENTS"]),
        "DBBENCH_RECONCILE_INTERVAL": "1",
        "DBBENCH_RESYNC_INTERVAL": chart_env["DBBENCH_RESYNC_INTERVAL"],
        "DBBENCH_PROGRESS_INTERVAL": chart_env["DBBENCH_PROGRESS_INTERVAL"],
        "DBBENCH_RESULTS_URL": service.url,
        "DBBENCH_RESULTS_KEY": service.key.decode(),
        "DBBENCH_OPERATOR_NAMESPACE": OPERATOR_NS,
        "DBBENCH_WATCH_NAMESPACES": ",".join(WATCHED),
        "DBBENCH_PASS_ERROR_LIMIT": "3",
        "DBBENCH_PASS_ERROR_WINDOW": "3",
        # The chart's port is fixed; here any free one (the operator runs in-process),
        # on loopback like the probe: a port free on 127.0.0.1 may be taken on another
        # address of the machine (a local cluster's node IP).
        "DBBENCH_METRICS_PORT": str(free_port()),
        "DBBENCH_METRICS_ADDRESS": "127.0.0.1",
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield kopf_args(deployment, free_port())
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def scrape_metrics(port: int) -> dict[str, list[tuple[dict[str, str], float]]] | None:
    """The samples of the operator's /metrics by name; None while it does not answer."""
    from prometheus_client.parser import text_string_to_metric_families  # noqa: PLC0415

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            text = response.read().decode()
    except OSError:
        return None
    samples: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples.setdefault(s.name, []).append((s.labels, s.value))
    return samples


def metric_total(port: int, name: str, labels: dict[str, str]) -> float:
    """The operator's sample `name` with exactly these labels (0 when absent), once
    its /metrics answers."""
    samples = wait_for(lambda: scrape_metrics(port), 30, "the operator's /metrics")
    return float(sum(v for found, v in samples.get(name, []) if found == labels))


def operator(args: list[str], *, verbose: bool = False) -> Any:
    """kopf in-process, logging at INFO as the chart's operator does. `verbose`
    (or DBBENCH_TEST_OPERATOR_VERBOSE=1, to debug a test) logs at DEBUG: the tests
    that look for a secret in the log use it, since kopf's DEBUG lines carry whole
    patches. DEBUG for every operator test cost CPU that no assertion needed
    (docs/testing.md, ninth look)."""
    from kopf.testing import KopfRunner  # noqa: PLC0415 - imports kopf's event loop machinery

    debug = verbose or os.environ.get("DBBENCH_TEST_OPERATOR_VERBOSE") == "1"
    return KopfRunner([*args, "--verbose"] if debug else args, timeout=120)


def phase_of(cluster: ControlPlane, ns: str, name: str) -> str:
    obj = get_json(cluster, "benchmarkrun", name, "-n", ns) or {}
    return str(obj.get("status", {}).get("phase", ""))


def targets_ready_known(cluster: ControlPlane, ns: str, name: str) -> dict[str, Any] | None:
    run = get_json(cluster, "benchmarkrun", name, "-n", ns) or {}
    kinds = {c["type"] for c in run.get("status", {}).get("conditions", [])}
    return run if "TargetsReady" in kinds else None


def progressing_because(
    cluster: ControlPlane, ns: str, name: str, reason: str
) -> dict[str, Any] | None:
    run = get_json(cluster, "benchmarkrun", name, "-n", ns) or {}
    conditions = run.get("status", {}).get("conditions", [])
    return (
        run
        if any(c["type"] == "Progressing" and c["reason"] == reason for c in conditions)
        else None
    )


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(c for c in obj["status"]["conditions"] if c["type"] == kind)


def test_run_progresses_owns_its_children_and_they_go_with_it(
    kube_cluster: ControlPlane, operator_env: list[str]
) -> None:
    ns, name = "team-a", "lifecycle"
    kube_cluster.kubectl("apply", "-f", "-", input=run_manifest(name, ns))
    with operator(operator_env, verbose=True) as runner:
        wait_for(lambda: phase_of(kube_cluster, ns, name) == "Provisioning", 60, "Provisioning")
        run = wait_for(lambda: targets_ready_known(kube_cluster, ns, name), 60, "TargetsReady")
        assert condition(run, "Accepted")["status"] == "True"
        assert condition(run, "Progressing")["status"] == "True"
        assert condition(run, "TargetsReady")["status"] == "False"
        assert run["status"]["observedGeneration"] == run["metadata"]["generation"]
        assert run["status"]["startedAt"]
        secret = wait_for(
            lambda: get_json(kube_cluster, "secret", f"{name}-credentials", "-n", ns),
            30, "credentials Secret",
        )  # fmt: skip
        run = wait_for(
            lambda: progressing_because(kube_cluster, ns, name, "Unschedulable"), 30,
            "the scheduler's refusal in the status",
        )  # fmt: skip
        (target,) = run["status"]["targets"]
        (ready,) = target["conditions"]
        # No node here: the scheduler refuses the database pod, and the status says so.
        assert (ready["type"], ready["status"], ready["reason"]) == (
            "Ready", "False", "Unschedulable")  # fmt: skip
        assert ready["message"].startswith("0/1 database pods ready; pod ")
        assert target["endpoint"].endswith(".svc.cluster.local:3306")
        statefulsets = get_json(kube_cluster, "statefulsets", "-n", ns, f"-ldbbench.io/run={name}")
        assert statefulsets is not None
        assert len(statefulsets["items"]) == 1
        plan = get_json(kube_cluster, "configmap", f"{name}-plan", "-n", ns)
        assert plan is not None
        assert json.loads(plan["data"]["plan.json"])
        # A deleted StatefulSet is noticed and re-applied by the next passes.
        sts_name = statefulsets["items"][0]["metadata"]["name"]
        kube_cluster.kubectl("delete", "statefulset", sts_name, "-n", ns)
        wait_for(lambda: get_json(kube_cluster, "statefulset", sts_name, "-n", ns), 30,
                 "the StatefulSet to be re-applied")  # fmt: skip
        # The target's NetworkPolicy (chart default networkPolicy.enabled), before its pods.
        policies = get_json(kube_cluster, "networkpolicies", "-n", ns, f"-ldbbench.io/run={name}")
        assert policies is not None
        (policy,) = policies["items"]
        instance = statefulsets["items"][0]["metadata"]["labels"]["app.kubernetes.io/instance"]
        assert policy["spec"]["podSelector"] == {
            "matchLabels": {"app.kubernetes.io/instance": instance}}  # fmt: skip
        for child in (secret, plan, statefulsets["items"][0], policy):
            owner = child["metadata"]["ownerReferences"][0]
            assert (owner["kind"], owner["uid"]) == ("BenchmarkRun", run["metadata"]["uid"])
            assert child["metadata"]["labels"]["dbbench.io/run-uid"] == run["metadata"]["uid"]
        events = get_json(kube_cluster, "events", "-n", ns,
                          f"--field-selector=involvedObject.name={name}")  # fmt: skip
        assert events is not None
        assert any(e["reason"] == "Provisioning" for e in events["items"])
    assert runner.exception is None, runner.exception
    # The chart's reduced RBAC is enough: no call was refused (kopf's or ours).
    assert "forbidden" not in runner.output.lower(), runner.output[-3000:]
    password = base64.b64decode(secret["data"]["root-password"]).decode()
    assert password not in runner.output, "a generated password reached the operator's log"

    kube_cluster.kubectl("delete", "benchmarkrun", name, "-n", ns, "--wait=false")
    with operator(operator_env):
        wait_for(lambda: get_json(kube_cluster, "benchmarkrun", name, "-n", ns) is None, 60,
                 "the run to be deleted (finalizer released)")  # fmt: skip
    wait_for(
        lambda: get_json(kube_cluster, "secret", f"{name}-credentials", "-n", ns) is None
        and get_json(kube_cluster, "configmap", f"{name}-plan", "-n", ns) is None
        and not (get_json(kube_cluster, "all", "-n", ns, f"-ldbbench.io/run={name}") or {}).get(
            "items"
        ),
        60, "garbage collection of the run's children",
    )  # fmt: skip


def test_restarted_operator_resumes_without_rotating_credentials(
    kube_cluster: ControlPlane, operator_env: list[str]
) -> None:
    ns, name = "team-b", "resume"
    kube_cluster.kubectl("apply", "-f", "-", input=run_manifest(name, ns))
    with operator(operator_env):
        wait_for(lambda: phase_of(kube_cluster, ns, name) == "Provisioning", 60, "Provisioning")
        first = wait_for(
            lambda: get_json(kube_cluster, "secret", f"{name}-credentials", "-n", ns), 30, "Secret"
        )
        started = (get_json(kube_cluster, "benchmarkrun", name, "-n", ns) or {})["status"][
            "startedAt"
        ]
    provisioning._applied.clear()  # a new operator process starts with an empty cache
    with operator(operator_env):
        time.sleep(4)  # several reconcile passes at a 1 s interval
        run = get_json(kube_cluster, "benchmarkrun", name, "-n", ns)
        assert run is not None
        assert run["status"]["phase"] == "Provisioning"
        assert run["status"]["startedAt"] == started
    second = get_json(kube_cluster, "secret", f"{name}-credentials", "-n", ns)
    assert second is not None
    assert second["data"] == first["data"]
    assert second["metadata"]["uid"] == first["metadata"]["uid"]


# Admission accepts each (a well-formed duration, a string setting); only the plan
# shows it cannot fit: the phases in 1 s, 2 pods x (100 + 1) runner connections,
# the operator's and 10 spare in MariaDB's max_connections 151.
SEMANTIC_ERRORS = {
    "too-short": ({"timeout": "1s"}, "spec.timeout", "timeout 1s"),
    "too-few-connections": (
        {"runner": {"pods": 2, "threads": 100},
         "targets": [{"name": "mariadb", "engine": "mariadb",
                      "settings": {"max_connections": "151"}}]},
        "spec.targets[0].settings.max_connections", 'at least "213"',
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", list(SEMANTIC_ERRORS))
def test_semantic_error_fails_once_with_the_field_named(
    kube_cluster: ControlPlane, operator_env: list[str], name: str
) -> None:
    ns = "team-a"
    overrides, field, words = SEMANTIC_ERRORS[name]
    manifest = run_manifest(name, ns, **overrides)
    kube_cluster.kubectl("apply", "-f", "-", input=manifest)
    with operator(operator_env) as runner:
        wait_for(lambda: phase_of(kube_cluster, ns, name) == "Failed", 60, "Failed")
        time.sleep(4)  # a crash-looping or retrying operator would act again by now
        run = get_json(kube_cluster, "benchmarkrun", name, "-n", ns)
    assert runner.exception is None
    assert run is not None
    assert run["status"]["phase"] == "Failed"
    accepted = condition(run, "Accepted")
    assert (accepted["status"], accepted["reason"]) == ("False", "InvalidSpec")
    assert field in accepted["message"]
    assert words in accepted["message"]
    assert condition(run, "Failed")["status"] == "True"
    selector = f"--field-selector=involvedObject.name={name},reason=InvalidSpec"
    events = get_json(kube_cluster, "events", "-n", ns, selector)
    assert events is not None
    assert len(events["items"]) == 1
    assert events["items"][0].get("count", 1) == 1


def test_runs_in_unwatched_namespaces_are_ignored(
    kube_cluster: ControlPlane, operator_env: list[str]
) -> None:
    ns, name = UNWATCHED, "elsewhere"
    kube_cluster.kubectl("apply", "-f", "-", input=run_manifest(name, ns))
    with operator(operator_env):
        # A watched run created at the same time proves the operator was working.
        kube_cluster.kubectl("apply", "-f", "-", input=run_manifest("witness", "team-b"))
        wait_for(lambda: phase_of(kube_cluster, "team-b", "witness"), 60, "the witness run")
        time.sleep(2)
    run = get_json(kube_cluster, "benchmarkrun", name, "-n", ns)
    assert run is not None
    assert "status" not in run or not run["status"].get("phase")
    assert not run["metadata"].get("finalizers")
    assert get_json(kube_cluster, "secret", f"{name}-credentials", "-n", ns) is None


def apply_external_run(
    cluster: ControlPlane, ns: str, name: str, secret: str, uri: str | None,
    run: dict[str, Any] | None = None, **target: Any,
) -> None:  # fmt: skip
    """A run whose one target is external; the URI Secret is created unless uri is None."""
    if uri is not None:
        cluster.kubectl(
            "create", "secret", "generic", secret, "-n", ns, f"--from-literal=uri={uri}"
        )
    targets = [{"name": "ext", "engine": "mariadb", **target,
                "external": {"uriSecretRef": {"name": secret, "key": "uri"}}}]  # fmt: skip
    manifest = run_manifest(name, ns, targets=targets, **(run or {}))
    cluster.kubectl("apply", "-f", "-", input=manifest)


def mariadb_uri(server: MariaDBServer) -> str:
    return f"mariadb://root:{server.root_password}@127.0.0.1:{server.port}/"


def test_external_target_is_verified_and_its_first_step_runs_as_a_job(
    kube_cluster: ControlPlane,
    operator_env: list[str],
    mariadb: MariaDBServer,
    results_service: ResultsService,
) -> None:
    """An external MariaDB (a real mariadbd) is probed through the URI in a Secret;
    the first step's runner Job is created as specified. No kubelet runs here, so
    its pods never start and the run's timeout ends it: Failed, children removed,
    and its summary.json and report say so."""
    ns, name = "team-b", "external"
    phases = [{"name": "load", "type": "insert", "batchSize": 100},
              {"name": "reads", "type": "pointReads", "operations": 1000}]  # fmt: skip
    overrides = {"phases": phases, "timeout": "25s", "runner": {"pods": 2, "threads": 2}}
    apply_external_run(kube_cluster, ns, name, "ext-db", mariadb_uri(mariadb), overrides)
    with operator(operator_env, verbose=True) as runner:
        wait_for(lambda: phase_of(kube_cluster, ns, name) == "Running", 60, "Running")
        job = wait_for(lambda: get_json(kube_cluster, "job", f"{name}-step-1", "-n", ns), 30,
                       "the first step's runner Job")  # fmt: skip
        run = get_json(kube_cluster, "benchmarkrun", name, "-n", ns) or {}
        assert run["status"]["progress"]["step"] == 1
        assert run["status"]["progress"]["target"] == "ext"
        # Edits of a started run are refused at admission, naming what to do.
        edit = kube_cluster.kubectl("patch", "br", name, "-n", ns, "--type=merge",
                                    "-p", '{"spec":{"timeout":"1h"}}', check=False)  # fmt: skip
        assert edit.returncode != 0
        assert "spec is immutable once the run has started" in edit.stderr
        assert "delete the BenchmarkRun and create it again" in edit.stderr
        wait_for(lambda: phase_of(kube_cluster, ns, name) == "Failed", 60, "Failed (timeout)")
        wait_for(lambda: (get_json(kube_cluster, "benchmarkrun", name, "-n", ns) or {})
                 .get("status", {}).get("cleanedUp"), 30, "cleanup")  # fmt: skip
    run = get_json(kube_cluster, "benchmarkrun", name, "-n", ns) or {}
    (target,) = run["status"]["targets"]
    assert target["ready"] is True
    assert "MariaDB" in target["serverVersion"]
    assert target["endpoint"] == f"127.0.0.1:{mariadb.port}"
    assert condition(run, "Failed")["reason"] == "Timeout"
    # The Job as created: indexed over the runner pods, no results claim, the URI
    # from the user's Secret as a file, the token from the run's Secret.
    spec = job["spec"]
    assert (spec["completionMode"], spec["completions"], spec["parallelism"]) == ("Indexed", 2, 2)
    assert spec["backoffLimit"] == 0  # an insert step
    pod = spec["template"]["spec"]
    assert not [v for v in pod["volumes"] if "persistentVolumeClaim" in v]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["target-uri"]["secret"]["secretName"] == "ext-db"
    assert job["metadata"]["ownerReferences"][0]["uid"] == run["metadata"]["uid"]
    # Children removed: no Job (so no pods) is left running the load.
    assert get_json(kube_cluster, "job", f"{name}-step-1", "-n", ns) is None
    assert mariadb.root_password not in runner.output
    assert mariadb.root_password not in json.dumps(run)
    assert mariadb.root_password not in json.dumps(job)
    # Nothing is deployed for an external target.
    assert not (get_json(kube_cluster, "statefulsets", "-n", ns, f"-ldbbench.io/run={name}")
                or {}).get("items")  # fmt: skip
    # A timed-out run still gets its summary.json, and the service its report.
    run_dir = results_service.root / ns / name / run["metadata"]["uid"]
    summary = RunSummary.model_validate_json((run_dir / "summary.json").read_bytes())
    assert (summary.run.phase, summary.run.reason) == ("Failed", "Timeout")
    assert summary.run.message == condition(run, "Failed")["message"]
    assert summary.run.current_step == 1
    assert [e.result for e in summary.steps] == [None, None]
    wait_for((run_dir / "report.html").is_file, 60, "report.html")
    html = (run_dir / "report.html").read_text()
    assert f"dbbench report: {ns}/{name} (failed)" in html
    assert "running when the run ended (Timeout: spec.timeout" in html
    assert "not started: the run ended at step 1" in html


def test_an_api_refusal_becomes_a_condition_then_fails_the_run(
    kube_cluster: ControlPlane, operator_env: list[str]
) -> None:
    """An affinity the API server refuses (422): retried, named, then Failed."""
    ns, name = "team-a", "bad-affinity"
    no_values = {"key": "k", "operator": "In"}  # In needs values: the API server says 422
    terms = {"nodeSelectorTerms": [{"matchExpressions": [no_values]}]}
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": terms}}
    hardware = {"affinity": affinity, "exclusive": False, "storage": {"size": "1Gi"}}
    kube_cluster.kubectl("apply", "-f", "-", input=run_manifest(name, ns, hardware=hardware))
    with operator(operator_env):
        retrying = wait_for(
            lambda: next((c for c in ((get_json(kube_cluster, "br", name, "-n", ns) or {})
                          .get("status", {}).get("conditions") or [])
                          if c["type"] == "Reconciled" and c["status"] == "False"), None),
            60, "a Reconciled=False condition",
        )  # fmt: skip
        wait_for(lambda: phase_of(kube_cluster, ns, name) == "Failed", 60, "Failed")
    assert retrying["reason"] == "KubernetesApiError"
    assert f"apply StatefulSet {ns}/{name}-mariadb-" in retrying["message"]
    assert "422" in retrying["message"]
    run = get_json(kube_cluster, "br", name, "-n", ns) or {}
    failed = condition(run, "Failed")
    assert failed["reason"] == "KubernetesApiError"
    assert "attempts over" in failed["message"]


def test_operator_metrics_count_runs_by_phase_passes_and_failed_passes(
    kube_cluster: ControlPlane, operator_env: list[str]
) -> None:
    """/metrics scraped over HTTP: runs by phase equal the API's, failed passes are
    counted by reason, and every pass is timed."""
    ns, name = "team-b", "metrics-refused"
    no_values = {"key": "k", "operator": "In"}  # refused by the API server (422), as above
    terms = {"nodeSelectorTerms": [{"matchExpressions": [no_values]}]}
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": terms}}
    hardware = {"affinity": affinity, "exclusive": False, "storage": {"size": "1Gi"}}
    kube_cluster.kubectl("apply", "-f", "-", input=run_manifest(name, ns, hardware=hardware))
    port = int(os.environ["DBBENCH_METRICS_PORT"])

    def phases_in_the_api() -> dict[str, int]:
        counts: dict[str, int] = {}
        for namespace in WATCHED:
            runs = get_json(kube_cluster, "br", "-n", namespace) or {"items": []}
            for run in runs["items"]:
                phase = run.get("status", {}).get("phase") or "Pending"
                counts[phase] = counts.get(phase, 0) + 1
        return counts

    with operator(operator_env):
        before = wait_for(lambda: scrape_metrics(port), 30, "the operator's /metrics")
        wait_for(lambda: phase_of(kube_cluster, ns, name) == "Failed", 60, "Failed")
        time.sleep(2)  # the watch event of the last status patch
        after = scrape_metrics(port)
        expected = phases_in_the_api()
    runs = {labels["phase"]: value for labels, value in after["dbbench_operator_runs"]}
    assert {phase: int(n) for phase, n in runs.items() if n} == expected
    assert set(runs) == {"Pending", "Provisioning", "Running", "Collecting", "Succeeded", "Failed"}

    def failed(samples: dict[str, list[tuple[dict[str, str], float]]]) -> float:
        return next(v for labels, v in samples["dbbench_operator_reconcile_errors_total"]
                    if labels["reason"] == "KubernetesApiError")  # fmt: skip

    assert failed(after) - failed(before) >= 3  # DBBENCH_PASS_ERROR_LIMIT passes, then Failed
    (count,) = [v for _, v in after["dbbench_operator_reconcile_duration_seconds_count"]]
    (first,) = [v for _, v in before["dbbench_operator_reconcile_duration_seconds_count"]]
    assert count >= first + 3


def test_external_target_with_a_missing_secret_waits_naming_the_field(
    kube_cluster: ControlPlane, operator_env: list[str]
) -> None:
    ns, name = "team-a", "no-secret"
    apply_external_run(kube_cluster, ns, name, "absent", None)
    with operator(operator_env):
        run = wait_for(lambda: targets_ready_known(kube_cluster, ns, name), 60, "TargetsReady")
    ready = condition(run, "TargetsReady")
    assert (ready["status"], ready["reason"]) == ("False", "SecretNotFound")
    assert "spec.targets[0].external.uriSecretRef" in ready["message"]


def test_external_target_of_another_topology_fails_naming_the_field(
    kube_cluster: ControlPlane, operator_env: list[str], mariadb: MariaDBServer
) -> None:
    ns, name = "team-a", "wrong-topology"
    apply_external_run(
        kube_cluster, ns, name, "ext-db", mariadb_uri(mariadb), topology="primaryReplica"
    )
    with operator(operator_env):
        wait_for(lambda: phase_of(kube_cluster, ns, name) == "Failed", 60, "Failed")
    run = get_json(kube_cluster, "benchmarkrun", name, "-n", ns)
    assert run is not None
    failed = condition(run, "Failed")
    assert failed["reason"] == "TopologyMismatch"
    assert (
        "spec.targets[0].topology is primaryReplica but the server is standalone"
        in (failed["message"])
    )


def test_a_deleted_run_is_released_within_seconds(
    kube_cluster: ControlPlane, operator_env: list[str]
) -> None:
    """The run's loop stops at once when the run is deleted, so kopf removes the
    finalizer without waiting for its next poll of an exiting daemon (60 s)."""
    ns, name = "team-b", "deleted-soon"
    kube_cluster.kubectl("apply", "-f", "-", input=run_manifest(name, ns))
    with operator(operator_env) as runner:
        wait_for(lambda: phase_of(kube_cluster, ns, name) == "Provisioning", 60, "Provisioning")
        time.sleep(2)  # the loop is waiting between passes
        kube_cluster.kubectl("delete", "benchmarkrun", name, "-n", ns, "--wait=false")
        deleted = time.monotonic()
        wait_for(lambda: get_json(kube_cluster, "benchmarkrun", name, "-n", ns) is None, 60,
                 "the run to be deleted (finalizer released)")  # fmt: skip
        took = time.monotonic() - deleted
    assert runner.exception is None, runner.exception
    assert took < 15, f"the finalizer was released {took:.0f}s after the deletion"
