"""Runner Jobs and step files as the operator builds them (pure, no cluster)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from dbbench_contract.api import parse_spec
from dbbench_operator.naming import RunRef
from dbbench_operator.specs.addresses import target_access
from dbbench_operator.specs.cache_drop_job import build_cache_drop_job
from dbbench_operator.specs.plan import plan
from dbbench_operator.specs.runner_job import (
    JobSettings,
    build_runner_job,
    build_step_config,
    database_host,
    step_dir,
)
from dbbench_runner.config import parse_config

REPO = Path(__file__).resolve().parents[4]
RUN = RunRef(name="quick", namespace="team-a", uid="1234-uid")
SETTINGS = JobSettings(
    image="dbbench/runner:0.1.0", pull_policy="IfNotPresent",
    results_url="http://dbbench-results.dbbench-system.svc:8080", deadline_seconds=900,
)  # fmt: skip


def spec_from(**overrides: Any) -> Any:
    raw = yaml.safe_load((REPO / "examples" / "quickstart.yaml").read_text())["spec"]
    raw.update(overrides)
    return parse_spec(raw)


def job_for(spec: Any, index: int) -> dict[str, Any]:
    step = plan(spec)[index]
    access = target_access(RUN, spec, 0)
    return build_runner_job(RUN, spec, step, access, SETTINGS, database_pods={"db-0": ["u", 0]})


def test_every_step_file_is_accepted_by_the_runner() -> None:
    """The operator writes what the runner parses: one contract, checked on every example."""
    paths = sorted((REPO / "examples").rglob("*.yaml"))
    assert {p.parent.name for p in paths} == {"examples", "field", "schedules"}, paths
    checked = set()
    for path in paths:
        raw = yaml.safe_load(path.read_text())["spec"]
        # A schedule's runs are made from its template's spec.
        spec = parse_spec(raw["template"]["spec"] if "template" in raw else raw)
        steps = plan(spec)
        assert steps, path.name
        for step in steps:
            index = next(i for i, t in enumerate(spec.targets) if t.name == step.target)
            config = build_step_config(spec, step, target_access(RUN, spec, index)).to_wire()
            raw = {**config, "pod": {**config["pod"], "index": 0}}
            if raw["target"]["uriFile"] is not None:
                raw["target"] = {**raw["target"], "uriFile": None, "uri": "mongodb://x/"}
                if raw["target"]["engine"] != "mongodb":
                    raw["target"].update(uri=None, host="h", port=3306)
            parsed = parse_config(json.loads(json.dumps(raw)))
            assert parsed.phase.name == step.phase, path.name
            checked.add(path)
    assert checked == set(paths)  # every example gave step files the runner parsed


def test_a_mariadb_step_reads_its_password_from_a_file_never_the_spec() -> None:
    spec = spec_from()
    config = build_step_config(spec, plan(spec)[1], target_access(RUN, spec, 0)).to_wire()
    target = config["target"]
    assert target["engine"] == "mariadb"
    assert target["host"].startswith("quick-mariadb-")
    assert target["host"].endswith(".team-a.svc.cluster.local")
    assert target["port"] == 3306
    assert target["passwordFile"] == "/var/run/dbbench/credentials/root-password"
    assert target["password"] is None
    # The spec's phase as it is (no keys: every record), the runner resolves it.
    assert config["phase"] == spec.phases[1].model_dump(mode="json")
    assert parse_config(config).keys == spec.dataset.records
    assert config["pod"] == {"index": 0, "count": 1}
    assert (config["step"], config["repeat"]) == (2, 1)


def test_step_files_name_their_phase_and_repeat_and_keys_only_for_uniform_reads() -> None:
    """phaseIndex and repeat seed the runner's streams and stamp its writes (a repeat
    replays nothing); hotspot reads draw from the distribution, so no `keys`."""
    path = REPO / "examples" / "field" / "3-cold-cache-small.yaml"
    spec = parse_spec({**yaml.safe_load(path.read_text())["spec"], "repeats": 2})
    configs = {
        (s.phase, s.repeat): build_step_config(spec, s, target_access(RUN, spec, 0)).to_wire()
        for s in plan(spec)
    }
    assert [(k, c["phaseIndex"], c["repeat"]) for k, c in configs.items()] == [
        (("load", 1), 0, 1),
        (("reads-hot-range", 1), 1, 1), (("reads-hot-range", 2), 1, 2),
        (("reads-whole-range", 1), 2, 1), (("reads-whole-range", 2), 2, 2),
    ]  # fmt: skip
    hot = configs[("reads-hot-range", 1)]["phase"]
    assert (hot["distribution"]["type"], hot["distribution"]["dataFraction"]) == ("hotspot", 0.1)
    assert parse_config(configs[("reads-hot-range", 1)]).keys is None
    assert parse_config(configs[("reads-whole-range", 1)]).keys == spec.dataset.records


def test_mongodb_durability_becomes_the_write_concern_unless_the_phase_says() -> None:
    spec = spec_from(targets=[{"name": "m", "engine": "mongodb", "topology": "replicaSet",
                               "durability": "strict"}])  # fmt: skip
    steps = plan(spec)
    config = build_step_config(spec, steps[0], target_access(RUN, spec, 0)).to_wire()
    assert config["phase"]["writeConcern"] is None  # the spec's phase says none
    assert config["target"]["durability"] == "strict"
    assert parse_config(config).write_concern == "majority"
    said = spec_from(
        targets=[
            {"name": "m", "engine": "mongodb", "topology": "replicaSet", "durability": "strict"}
        ],
        phases=[{"name": "load", "type": "insert", "writeConcern": "acknowledged"}],
    )
    own = build_step_config(said, plan(said)[0], target_access(RUN, said, 0)).to_wire()
    assert parse_config(own).write_concern == "acknowledged"
    assert config["target"]["uri"].startswith("mongodb://")
    assert "replicaSet=rs0" in config["target"]["uri"]
    assert "@" not in config["target"]["uri"]
    assert config["target"]["user"] == "dbbench"


def test_the_runner_job_is_indexed_and_never_mounts_the_results_claim() -> None:
    spec = spec_from(runner={"pods": 3, "threads": 2})
    job = job_for(spec, 1)
    assert job["metadata"]["ownerReferences"][0]["uid"] == RUN.uid
    body = job["spec"]
    assert body["completionMode"] == "Indexed"
    assert body["completions"] == body["parallelism"] == 3
    assert body["backoffLimit"] == 0
    assert body["activeDeadlineSeconds"] == 900
    assert job["metadata"]["labels"]["dbbench.io/run-uid"] == RUN.uid
    assert body["template"]["metadata"]["labels"]["dbbench.io/run-uid"] == RUN.uid
    pod = body["template"]["spec"]
    claims = [v for v in pod["volumes"] if "persistentVolumeClaim" in v]
    assert claims == []
    assert pod["automountServiceAccountToken"] is False
    assert pod["securityContext"]["runAsNonRoot"] is True
    container = pod["containers"][0]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    env = {e["name"]: e for e in container["env"]}
    assert env["DBBENCH_RESULTS_TOKEN"]["valueFrom"]["secretKeyRef"] == {
        "name": "quick-credentials", "key": "results-token"}  # fmt: skip
    assert env["DBBENCH_RUN"]["value"] == "team-a/quick/1234-uid"
    assert env["DBBENCH_STEP"]["value"] == step_dir(plan(spec)[1])
    secrets = [v["secret"] for v in pod["volumes"] if "secret" in v]
    assert secrets == [{"secretName": "quick-credentials", "defaultMode": 0o400,
                        "items": [{"key": "root-password", "path": "root-password"}]}]  # fmt: skip
    assert "dbbench.io/database-pods" in job["metadata"]["annotations"]


@pytest.mark.parametrize("index", [0, 1, 2])  # the load, the point reads, the mix
def test_no_runner_pod_is_ever_retried_and_any_failure_or_disruption_fails_the_job(
    index: int,
) -> None:
    job = job_for(spec_from(), index)["spec"]
    assert job["backoffLimit"] == 0
    rules = job["podFailurePolicy"]["rules"]
    assert {"action": "FailJob", "onExitCodes": {
        "containerName": "runner", "operator": "NotIn", "values": [0]}} in rules  # fmt: skip
    assert {"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget"}]} in rules
    assert all(rule["action"] == "FailJob" for rule in rules)  # no Ignore: no silent retry


def test_an_external_target_is_read_from_the_users_secret_as_a_file() -> None:
    external = {"uriSecretRef": {"name": "my-db", "key": "uri"}}
    spec = spec_from(targets=[{"name": "ext", "engine": "mariadb", "external": external}])
    step = plan(spec)[0]
    access = target_access(RUN, spec, 0)
    config = build_step_config(spec, step, access).to_wire()
    given = {k: v for k, v in config["target"].items() if v not in (None, [], ())}
    assert given == {"name": "ext", "engine": "mariadb", "connectRetries": 6, "database": "dbbench",
                     "uriFile": "/var/run/dbbench/target/uri", "connectTimeout": 5.0,
                     "durability": "safe"}  # fmt: skip
    job = build_runner_job(RUN, spec, step, access, SETTINGS, database_pods={})
    volumes = {v["name"]: v for v in job["spec"]["template"]["spec"]["volumes"]}
    assert volumes["target-uri"]["secret"]["secretName"] == "my-db"
    assert "credentials" not in volumes


@pytest.mark.parametrize("node", ["kind-worker", "ip-10-0-0-1.ec2.internal"])
def test_the_cache_drop_job_is_privileged_pinned_and_in_the_operators_namespace(
    node: str,
) -> None:
    step = plan(spec_from())[1]
    job = build_cache_drop_job(RUN, step, node, "dbbench/runner:0.1.0", "dbbench-system")
    pod = job["spec"]["template"]["spec"]
    assert pod["nodeName"] == node
    assert pod["containers"][0]["securityContext"]["privileged"] is True
    assert "drop_caches" in pod["containers"][0]["command"][-1]
    meta = job["metadata"]
    # Not in the run's namespace (which may enforce Pod Security baseline), so not
    # owned (owner references cannot cross namespaces): found by the run's uid label.
    assert meta["namespace"] == "dbbench-system"
    assert "ownerReferences" not in meta
    assert meta["labels"]["dbbench.io/run-uid"] == RUN.uid
    assert meta["labels"]["dbbench.io/run-namespace"] == RUN.namespace
    assert job["spec"]["template"]["metadata"]["labels"]["dbbench.io/run-uid"] == RUN.uid
    assert job["spec"]["ttlSecondsAfterFinished"] > 0
    assert len(meta["name"]) <= 63
    other = build_cache_drop_job(RunRef("quick", "team-b", "5678-uid"), step, node, "i", "ns")
    assert other["metadata"]["name"] != meta["name"]  # one shared namespace, many runs


def test_the_step_file_says_where_the_database_runs_and_its_limits() -> None:
    pods = [
        {"metadata": {"name": "quick-mariadb-1",
                      "labels": {"app.kubernetes.io/component": "replica"}},
         "spec": {"nodeName": "node-b", "containers": [
             {"resources": {"limits": {"memory": "512Mi", "cpu": "500m"}}}]}},
        {"metadata": {"name": "quick-mariadb-0",
                      "labels": {"app.kubernetes.io/component": "primary"}},
         "spec": {"nodeName": "node-a", "containers": [
             {"resources": {"limits": {"memory": "512Mi", "cpu": "500m"}}}]}},
    ]  # fmt: skip
    host = database_host(pods)
    assert [(p.name, p.node, p.role) for p in host.pods] == [
        ("quick-mariadb-0", "node-a", "primary"),
        ("quick-mariadb-1", "node-b", "replica"),
    ]
    assert (host.memory_limit_bytes, host.cpu_limit) == (512 * 2**20, 0.5)
    spec = spec_from()
    config = build_step_config(spec, plan(spec)[0], target_access(RUN, spec, 0), None, host)
    assert config.to_wire()["databaseHost"]["pods"][0] == {
        "name": "quick-mariadb-0",
        "node": "node-a",
        "role": "primary",
        "memoryLimitBytes": 512 * 2**20,
        "cpuLimit": 0.5,
    }
    unscheduled = database_host([{"metadata": {"name": "x-0"}, "spec": {}}])
    assert unscheduled.pods[0].node is None
    assert unscheduled.memory_limit_bytes is None


def test_the_step_file_carries_the_jobs_deadline_for_upload_retries() -> None:
    """Runner pods retry uploads until the Job ends: the operator writes that moment
    (the Job's creation plus its activeDeadlineSeconds) into the step file."""
    created = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    spec = spec_from()
    step = plan(spec)[0]
    access = target_access(RUN, spec, 0)
    for seconds, expected in ((900, 900), (10, 60)):  # never below the Job's own minimum
        settings = replace(SETTINGS, deadline_seconds=seconds, created_at=created)
        job = build_runner_job(RUN, spec, step, access, settings, database_pods={})
        assert job["spec"]["activeDeadlineSeconds"] == expected
        wire = build_step_config(spec, step, access, job_deadline=settings.job_deadline).to_wire()
        assert wire["jobDeadline"] == (created + timedelta(seconds=expected)).isoformat().replace(
            "+00:00", "Z")  # fmt: skip
        raw = {**wire, "pod": {**wire["pod"], "index": 0}}
        parsed = parse_config(json.loads(json.dumps(raw)))
        assert parsed.job_deadline == created + timedelta(seconds=expected)


def test_prepared_statements_reach_the_sql_targets_steps_only() -> None:
    """runner.statements goes to each SQL target's step file (the runner refuses prepared
    on MongoDB, which has no statements): a mixed run prepares on PostgreSQL only."""
    spec = spec_from(
        targets=[{"name": "pg", "engine": "postgresql"}, {"name": "mongo", "engine": "mongodb"}],
        runner={"statements": "prepared"},
    )
    steps = {}
    for step in plan(spec):
        index = next(i for i, t in enumerate(spec.targets) if t.name == step.target)
        steps[step.target] = build_step_config(spec, step, target_access(RUN, spec, index))
    assert steps["pg"].statements == steps["pg"].statement_mode == "prepared"
    assert steps["mongo"].statements is None
    assert steps["mongo"].statement_mode is None
