"""Client-side routers on the runner Job the operator builds (pure builders, no cluster).

With `sharding.routers.placement: client` every runner pod carries a mongos:
a native sidecar (an init container with restartPolicy Always, so the Job's
pods still complete) started with the config servers' replica set as
--configdb and the cluster's keyFile, and the runner's step file points at
localhost. (The API server and the Job controller accepting it:
tests/integration/operator/specs/test_shard_placement_applied.py.)
"""

from __future__ import annotations

import json
from typing import Any

from dbbench_contract.api import parse_spec
from dbbench_operator.naming import RunRef, credentials_secret_name
from dbbench_operator.settings import BUILT_IN_ENGINE_IMAGES, EngineImage
from dbbench_operator.specs.addresses import target_access, topology_request
from dbbench_operator.specs.credentials import ROOT_USERNAME
from dbbench_operator.specs.databases import target_names
from dbbench_operator.specs.databases.request import SECRET_KEYFILE_KEY
from dbbench_operator.specs.plan import plan
from dbbench_operator.specs.runner_job import (
    JobSettings,
    build_runner_job,
    build_step_config,
    build_step_configmap,
)
from dbbench_runner.config import parse_config

RUN = RunRef(name="field2", namespace="perf", uid="5e1f-uid")
SETTINGS = JobSettings(
    image="dbbench/runner:0.1.0", pull_policy="IfNotPresent",
    results_url="http://dbbench-results.dbbench-system.svc:8080", deadline_seconds=900,
)  # fmt: skip
MONGOS_RESOURCES = {"requests": {"cpu": "500m", "memory": "512Mi"},
                    "limits": {"cpu": "1", "memory": "512Mi"}}  # fmt: skip


def spec_with(routers: dict[str, Any]) -> Any:
    return parse_spec({
        "targets": [{"name": "sharded", "engine": "mongodb", "topology": "sharded", "shards": 3,
                     "members": 1, "sharding": {"routers": routers}}],
        "hardware": {"resources": {"limits": {"cpu": "2", "memory": "8Gi"}},
                     "mongosResources": MONGOS_RESOURCES},
        "runner": {"pods": 2, "threads": 4},
        "phases": [{"name": "load", "type": "insert"}],
    })  # fmt: skip


def pod_spec(spec: Any) -> dict[str, Any]:
    job = build_runner_job(RUN, spec, plan(spec)[0], target_access(RUN, spec, 0), SETTINGS,
                           database_pods={})  # fmt: skip
    return dict(job["spec"]["template"]["spec"])


def test_every_runner_pod_has_its_own_mongos_on_the_config_servers(monkeypatch: Any) -> None:
    monkeypatch.setenv("DBBENCH_ENGINE_IMAGES", json.dumps(
        {"mongodb": {"repository": "registry.example/mongo", "version": "8.0.4"}}))  # fmt: skip
    spec = spec_with({"placement": "client"})
    pod = pod_spec(spec)
    keyfile, mongos = pod["initContainers"]
    request = topology_request(RUN, spec, spec.targets[0], "cluster.local", {
        "mongodb": EngineImage("registry.example/mongo", "8.0.4")})  # fmt: skip
    config_servers = target_names.layout(request).config_servers
    assert config_servers is not None
    hosts = ",".join(config_servers.hosts)
    assert hosts.count(":27017") == 1  # members: 1 -> one config server
    assert mongos["name"] == "mongos"
    assert mongos["restartPolicy"] == "Always"  # a sidecar: stopped when the runner exits
    assert mongos["image"] == "registry.example/mongo:8.0.4"  # the servers' own image
    assert mongos["command"] == ["mongos"]
    assert mongos["args"] == [
        "--bind_ip=127.0.0.1", "--port=27017", f"--configdb=cfg/{hosts}",
        "--keyFile=/mongos-keyfile/keyfile", "--nounixsocket",
    ]  # fmt: skip
    assert hosts.startswith(f"{target_names.base_name(request)}-cfg-0.")
    assert mongos["startupProbe"]["tcpSocket"] == {"port": 27017}
    assert mongos["resources"] == MONGOS_RESOURCES
    assert mongos["securityContext"]["readOnlyRootFilesystem"] is True
    # The keyFile: from the run's Secret, copied with mode 0400 before mongos starts.
    assert keyfile["name"] == "mongos-keyfile"
    assert "install -m 0400" in keyfile["command"][-1]
    volumes = {v["name"]: v for v in pod["volumes"]}
    secret = volumes["mongos-keyfile-secret"]["secret"]
    assert secret["secretName"] == credentials_secret_name(RUN)
    assert secret["items"] == [{"key": SECRET_KEYFILE_KEY, "path": "keyfile"}]
    assert volumes["mongos-keyfile"]["emptyDir"]["medium"] == "Memory"
    # The runner is the pod's only container, so the Job's exit-code rule is about it.
    assert [c["name"] for c in pod["containers"]] == ["runner"]


def test_the_runner_connects_to_its_own_router_on_localhost() -> None:
    spec = spec_with({"placement": "client"})
    step = plan(spec)[0]
    access = target_access(RUN, spec, 0)
    config = build_step_config(spec, step, access)
    assert config.target.uri == "mongodb://localhost:27017/?authSource=admin"
    # The file each runner pod reads, as the runner parses it.
    configmap = build_step_configmap(RUN, step, config)
    raw = json.loads(configmap["data"]["step.yaml"])
    parsed = parse_config({**raw, "pod": {**raw["pod"], "index": 1}})
    assert parsed.target.uri == "mongodb://localhost:27017/?authSource=admin"
    assert parsed.target.user == ROOT_USERNAME  # the run's login, as through the Service


def test_server_side_routers_keep_the_service_and_no_sidecar() -> None:
    spec = spec_with({"placement": "server", "count": 2})
    pod = pod_spec(spec)
    assert "initContainers" not in pod
    assert not any(v["name"].startswith("mongos") for v in pod["volumes"])
    request = topology_request(RUN, spec, spec.targets[0], "cluster.local", BUILT_IN_ENGINE_IMAGES)
    uri = target_access(RUN, spec, 0).uri
    assert uri == f"mongodb://{target_names.layout(request).endpoint}/?authSource=admin"
