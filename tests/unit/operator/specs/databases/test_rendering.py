"""Rendered manifests (helm template of charts/) carry the request everywhere it matters."""

from __future__ import annotations

import re
import subprocess
from typing import Any

import pytest

from dbbench_operator.specs.databases import target_names
from dbbench_operator.specs.databases.rendering import build_values, charts_dir, render
from dbbench_operator.specs.databases.request import (
    DEFAULT_CONFIG_SERVER_RESOURCES,
    DEFAULT_MONGOS_RESOURCES,
)
from dbbench_operator.specs.databases.sizing import engine_settings
from tests.fixtures.topology import COMBINATIONS, HARDWARE, combo_id, make_request

WORKLOADS = ("StatefulSet", "Deployment")
DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def _workloads(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] in WORKLOADS]


def _args(workload: dict[str, Any]) -> list[str]:
    return list(workload["spec"]["template"]["spec"]["containers"][0]["args"])


@pytest.fixture(scope="module", params=COMBINATIONS, ids=combo_id)
def rendered(request: pytest.FixtureRequest, helm_on_path: str) -> tuple[Any, list[dict[str, Any]]]:
    engine, topology, members, shards = request.param
    topo_request = make_request(engine, topology, members, shards)
    return topo_request, render(topo_request)


def test_hardware_lands_on_every_database_pod_template(rendered: Any) -> None:
    _topo_request, docs = rendered
    workloads = _workloads(docs)
    assert workloads
    for workload in workloads:
        pod = workload["spec"]["template"]["spec"]
        where = f"{workload['kind']}/{workload['metadata']['name']}"
        assert pod["nodeSelector"] == HARDWARE.node_selector, where
        assert pod["tolerations"] == list(HARDWARE.tolerations), where
        assert pod["affinity"]["nodeAffinity"] == HARDWARE.affinity["nodeAffinity"], where
        preferred = pod["affinity"]["podAntiAffinity"][
            "preferredDuringSchedulingIgnoredDuringExecution"
        ]
        user_term = HARDWARE.affinity["podAntiAffinity"][
            "preferredDuringSchedulingIgnoredDuringExecution"
        ][0]
        spread = {
            "weight": 100,
            "podAffinityTerm": {
                "topologyKey": "kubernetes.io/hostname",
                "labelSelector": {"matchLabels": workload["spec"]["selector"]["matchLabels"]},
            },
        }
        component = workload["metadata"]["labels"]["app.kubernetes.io/component"]
        # Shards (placement spread) also spread apart from each other, more lightly.
        shards = {
            "app.kubernetes.io/instance": workload["metadata"]["labels"][
                "app.kubernetes.io/instance"
            ],
            "dbbench.io/shard-member": "true",
        }
        apart = {
            "weight": 50,
            "podAffinityTerm": {
                "topologyKey": "kubernetes.io/hostname",
                "labelSelector": {"matchLabels": shards},
            },
        }
        wanted_terms = [user_term, spread, *([apart] if component.startswith("shard") else [])]
        assert preferred == wanted_terms, where
        # Config servers and routers have their own (smaller) defaults: test_chart_hardening.
        wanted = {
            "configsvr": DEFAULT_CONFIG_SERVER_RESOURCES, "mongos": DEFAULT_MONGOS_RESOURCES
        }.get(component, HARDWARE.resources)  # fmt: skip
        for container in [*pod.get("initContainers", []), *pod["containers"]]:
            assert container["resources"] == wanted, where
        if workload["kind"] == "StatefulSet":
            (claim,) = workload["spec"]["volumeClaimTemplates"]
            assert claim["spec"]["storageClassName"] == "fast-ssd", where
            assert claim["spec"]["resources"]["requests"]["storage"] == "50Gi", where
            assert workload["spec"]["persistentVolumeClaimRetentionPolicy"] == {
                "whenDeleted": "Delete",
                "whenScaled": "Retain",
            }


def test_names_labels_and_services(rendered: Any) -> None:
    topo_request, docs = rendered
    base = target_names.base_name(topo_request)
    for doc in docs:
        name = doc["metadata"]["name"]
        assert name.startswith(base), name
        assert DNS_1035.match(name), name
        labels = doc["metadata"]["labels"]
        assert labels["app.kubernetes.io/managed-by"] == "dbbench"
        assert labels["dbbench.io/run"] == "nightly-compare"
        assert labels["app.kubernetes.io/instance"] == base
    # `helm test` pods stay out of what the operator applies.
    assert "Pod" not in {d["kind"] for d in docs}
    lay = target_names.layout(topo_request)
    headless = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Service"
                and d["spec"].get("clusterIP") == "None"}  # fmt: skip
    sets = {d["metadata"]["name"]: d for d in docs if d["kind"] == "StatefulSet"}
    assert set(sets) == {rs.statefulset for rs in lay.replica_sets} == set(headless)
    for rs in lay.replica_sets:
        assert headless[rs.statefulset]["spec"]["publishNotReadyAddresses"] is True
        assert sets[rs.statefulset]["spec"]["replicas"] == rs.members
        assert sets[rs.statefulset]["spec"]["serviceName"] == rs.statefulset


def test_probes_are_tcp_only(rendered: Any) -> None:
    _, docs = rendered
    workloads = _workloads(docs)
    assert workloads
    for workload in workloads:
        containers = workload["spec"]["template"]["spec"]["containers"]
        assert containers, workload["metadata"]["name"]
        for container in containers:
            for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
                assert set(container[probe]) - {"periodSeconds", "failureThreshold"} == {
                    "tcpSocket"
                }, f"{workload['metadata']['name']} {probe}"


def test_pods_run_as_non_root(rendered: Any) -> None:
    _, docs = rendered
    workloads = _workloads(docs)
    assert workloads
    for workload in workloads:
        security = workload["spec"]["template"]["spec"]["securityContext"]
        assert security["runAsNonRoot"] is True
        assert security["runAsUser"] == 999


def test_mongodb_replica_sets_and_keyfile(helm_on_path: str) -> None:
    topo_request = make_request("mongodb", "sharded", 3, 2)
    docs = render(topo_request)
    lay = target_names.layout(topo_request)
    sets = {d["metadata"]["name"]: d for d in docs if d["kind"] == "StatefulSet"}
    assert lay.config_servers is not None
    cfg_args = _args(sets[lay.config_servers.statefulset])
    assert "--replSet=cfg" in cfg_args
    assert "--configsvr" in cfg_args
    assert "--wiredTigerCacheSizeGB=0.25" in cfg_args  # from the config servers' 1Gi
    shard_args = _args(sets[lay.shards[1].statefulset])
    assert "--replSet=shard1" in shard_args
    assert "--shardsvr" in shard_args
    mongos = next(d for d in docs if d["kind"] == "Deployment")
    assert f"--configdb=cfg/{','.join(lay.config_servers.hosts)}" in _args(mongos)
    for workload in [*sets.values(), mongos]:
        pod = workload["spec"]["template"]["spec"]
        (init,) = pod["initContainers"]
        assert "install -m 0400 /keyfile-secret/keyfile" in init["command"][-1]
        assert "--keyFile=/keyfile/keyfile" in _args(workload)
        secret = next(v for v in pod["volumes"] if "secret" in v)["secret"]
        assert secret["secretName"] == "nightly-compare-creds"
        assert secret["items"] == [{"key": "mongodb-keyfile", "path": "keyfile"}]


def test_mongodb_replica_set_root_user_from_secret(helm_on_path: str) -> None:
    docs = render(make_request("mongodb", "replicaSet", 3))
    (sts,) = _workloads(docs)
    env = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in
           sts["spec"]["template"]["spec"]["containers"][0]["env"]}  # fmt: skip
    assert env == {
        "MONGO_INITDB_ROOT_USERNAME": {"name": "nightly-compare-creds", "key": "root-username"},
        "MONGO_INITDB_ROOT_PASSWORD": {"name": "nightly-compare-creds", "key": "root-password"},
    }
    assert sts["spec"]["template"]["spec"]["containers"][0]["image"] == "mongo:8.0"


@pytest.mark.parametrize(
    ("engine", "image", "server", "password_env"),
    [("mysql", "mysql:8.4", "mysqld", "MYSQL_ROOT_PASSWORD"),
     ("mariadb", "mariadb:11.8", "mariadbd", "MARIADB_ROOT_PASSWORD")],
)  # fmt: skip
def test_mysql_family_servers(
    helm_on_path: str, engine: str, image: str, server: str, password_env: str
) -> None:
    request = make_request(engine, "primaryReplica", 3, durability="fast")
    docs = render(request)
    (sts,) = _workloads(docs)
    container = sts["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == image
    assert container["command"][:2] == ["bash", "-ec"]
    assert '--server-id="$(( ${HOSTNAME##*-} + 1 ))"' in container["command"][2]
    args = container["args"]
    assert args[0] == server
    assert "--innodb_flush_log_at_trx_commit=2" in args
    assert "--sync_binlog=0" in args
    pool = engine_settings(request)["innodb_buffer_pool_size"]
    assert f"--innodb_buffer_pool_size={pool}" in args
    password = [e for e in container["env"] if e["name"] == password_env]
    assert password == [{
        "name": password_env,
        "valueFrom": {"secretKeyRef": {"name": "nightly-compare-creds", "key": "root-password"}},
    }]  # fmt: skip
    assert {e["name"] for e in container["env"]} == {
        password_env, "DBBENCH_PRIMARY_FLAGS", "DBBENCH_REPLICA_FLAGS"
    }  # fmt: skip


def test_image_override_and_retain(helm_on_path: str) -> None:
    request = make_request(
        "mariadb", "standalone", image="registry.local/mariadb:11.4.5", cleanup="Retain"
    )
    (sts,) = _workloads(render(request))
    assert (
        sts["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.local/mariadb:11.4.5"
    )
    # Retain keeps the data while the target is scaled to zero; the volumes
    # still go with the StatefulSet, which the run owns (nothing outlives it).
    assert sts["spec"]["persistentVolumeClaimRetentionPolicy"] == {
        "whenDeleted": "Delete",
        "whenScaled": "Retain",
    }


def test_build_values_is_pure_data() -> None:
    request = make_request("mongodb", "sharded", 3, 3, version="7.0")
    values = build_values(request)
    assert values == build_values(request)
    assert values["image"] == {"tag": "7.0", "reference": ""}
    assert values["shards"] == 3
    assert values["fullnameOverride"] == target_names.base_name(request)
    assert values["commonLabels"] == target_names.common_labels(request)


@pytest.mark.parametrize("chart", ["mongodb", "mysql", "postgresql"])
def test_charts_pass_helm_lint_with_their_schema(helm_on_path: str, chart: str) -> None:
    path = str(charts_dir() / chart)
    ok = subprocess.run(
        [helm_on_path, "lint", "--strict", path, "--set", "auth.existingSecret=creds"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert ok.returncode == 0, ok.stdout + ok.stderr
    # The schema is enforced: an unknown topology is refused with the field named.
    bad = subprocess.run(
        [helm_on_path, "template", "r", path, "--set", "auth.existingSecret=creds",
         "--set", "topology=galaxy"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert bad.returncode != 0
    assert "topology" in bad.stderr
