"""Issue 8, defects 3, 5 and 7 on the rendered charts (helm template):
config-server and mongos resources, an idempotent keyFile init container,
quoted server flags, mongos session affinity, the cluster domain,
fsGroupChangePolicy and the MariaDB role flags."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from dbbench_operator.specs.databases import target_names
from dbbench_operator.specs.databases.rendering import render
from dbbench_operator.specs.databases.replication_flags import role_flags
from dbbench_operator.specs.databases.request import Hardware
from tests.fixtures.topology import COMBINATIONS, HARDWARE, combo_id, make_request

POD_UID = 999  # the charts' runAsUser


def _by_name(docs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


def _container(workload: dict[str, Any]) -> dict[str, Any]:
    return dict(workload["spec"]["template"]["spec"]["containers"][0])


def test_config_servers_and_mongos_get_their_own_resources_and_cache(helm_on_path: str) -> None:
    request = make_request("mongodb", "sharded", 3, 2)
    docs = render(request)
    lay = target_names.layout(request)
    assert lay.config_servers is not None
    sets = _by_name(docs, "StatefulSet")
    cfg = _container(sets[lay.config_servers.statefulset])
    one_gib = {"cpu": "500m", "memory": "1Gi"}
    assert cfg["resources"] == {"requests": one_gib, "limits": one_gib}
    assert "--wiredTigerCacheSizeGB=0.25" in cfg["args"]  # from 1Gi, not the data nodes' 8Gi
    shard = _container(sets[lay.shards[0].statefulset])
    assert shard["resources"] == HARDWARE.resources
    assert "--wiredTigerCacheSizeGB=3.5" in shard["args"]
    (mongos,) = _by_name(docs, "Deployment").values()
    router = {"cpu": "1", "memory": "1Gi"}
    assert _container(mongos)["resources"] == {"requests": router, "limits": router}
    assert not any(a.startswith("--wiredTiger") for a in _container(mongos)["args"])


def test_config_server_and_mongos_resources_from_the_spec(helm_on_path: str) -> None:
    small = {
        "requests": {"cpu": "250m", "memory": "2Gi"},
        "limits": {"cpu": "250m", "memory": "2Gi"},
    }
    hardware = Hardware(
        resources=HARDWARE.resources, config_server_resources=small, mongos_resources=small
    )
    request = make_request("mongodb", "sharded", 1, 1, hardware=hardware)
    docs = render(request)
    cfg = _container(_by_name(docs, "StatefulSet")[f"{target_names.base_name(request)}-cfg"])
    assert cfg["resources"] == small
    assert "--wiredTigerCacheSizeGB=0.5" in cfg["args"]
    (mongos,) = _by_name(docs, "Deployment").values()
    assert _container(mongos)["resources"] == small


def _run_as_pod_user(script: str) -> subprocess.CompletedProcess[str]:
    argv = ["sh", "-c", script]
    if os.geteuid() == 0:  # as the pod does: root would ignore the 0400 mode
        argv = ["setpriv", f"--reuid={POD_UID}", f"--regid={POD_UID}", "--clear-groups", *argv]
    return subprocess.run(argv, capture_output=True, text=True, check=False, timeout=30)


def test_keyfile_init_container_can_run_twice(helm_on_path: str) -> None:
    """A restarted pod re-runs its init containers on the same emptyDir."""
    docs = render(make_request("mongodb", "replicaSet", 3))
    (sts,) = _by_name(docs, "StatefulSet").values()
    (init,) = sts["spec"]["template"]["spec"]["initContainers"]
    assert init["command"][:2] == ["sh", "-c"]
    # Under /tmp (pytest's own tmp dirs are 0700 root: the pod user could not enter).
    base = Path(tempfile.mkdtemp(prefix="dbbench-keyfile-"))
    try:
        secret_dir, keyfile_dir = base / "secret", base / "keyfile"
        secret_dir.mkdir()
        keyfile_dir.mkdir()
        (secret_dir / "keyfile").write_text("c2VjcmV0a2V5\n")
        if os.geteuid() == 0:
            for path in (base, secret_dir, keyfile_dir, secret_dir / "keyfile"):
                os.chown(path, POD_UID, POD_UID)
        script = re.sub(r"(?<![\w./-])/keyfile-secret/", f"{secret_dir}/", init["command"][2])
        script = re.sub(r"(?<![\w./-])/keyfile/", f"{keyfile_dir}/", script)
        assert str(base) in script
        assert not re.search(r"(?<![\w./-])/keyfile", script), script
        for run in (1, 2):
            result = _run_as_pod_user(script)
            assert result.returncode == 0, f"run {run}: {result.stderr}"
            target = keyfile_dir / "keyfile"
            assert target.read_text() == "c2VjcmV0a2V5\n"
            assert target.stat().st_mode & 0o777 == 0o400
        assert sorted(p.name for p in keyfile_dir.iterdir()) == ["keyfile"]
    finally:
        shutil.rmtree(base)


@pytest.mark.parametrize(
    ("engine", "key"),
    [("mongodb", "wiredTigerCollectionBlockCompressor"), ("mariadb", "innodb_flush_method")],
)
def test_server_flags_are_quoted(helm_on_path: str, engine: str, key: str) -> None:
    """A value with YAML syntax in it stays one string argument."""
    value = "odd: value #not-a-comment"
    topology = "replicaSet" if engine == "mongodb" else "standalone"
    docs = render(make_request(engine, topology, 1, settings={key: value}))
    (sts,) = _by_name(docs, "StatefulSet").values()
    assert f"--{key}={value}" in _container(sts)["args"]


def test_mongos_service_keeps_a_client_on_one_router(helm_on_path: str) -> None:
    docs = render(make_request("mongodb", "sharded", 1, 1))
    service = next(
        s for s in _by_name(docs, "Service").values() if s["metadata"]["name"].endswith("-mongos")
    )
    # Cursors live on the mongos that opened them: getMore must reach the same one.
    assert service["spec"]["sessionAffinity"] == "ClientIP"


def test_cluster_domain_is_configurable(helm_on_path: str) -> None:
    request = make_request("mongodb", "sharded", 2, 1, cluster_domain="corp.example")
    lay = target_names.layout(request)
    assert lay.endpoint.endswith(".svc.corp.example:27017")
    assert all(".svc.corp.example:" in h for rs in lay.replica_sets for h in rs.hosts)
    (mongos,) = _by_name(render(request), "Deployment").values()
    assert lay.config_servers is not None
    assert f"--configdb=cfg/{','.join(lay.config_servers.hosts)}" in _container(mongos)["args"]
    default = target_names.layout(make_request("mongodb", "replicaSet", 3))
    assert default.replica_sets[0].host(0).endswith(".svc.cluster.local:27017")


@pytest.mark.parametrize("combo", COMBINATIONS, ids=combo_id)
def test_volume_ownership_is_changed_only_on_mismatch(
    helm_on_path: str, combo: tuple[str, str, int, int]
) -> None:
    engine, topology, members, shards = combo
    rendered = render(make_request(engine, topology, members, shards))
    workloads = [w for kind in ("StatefulSet", "Deployment")
                 for w in _by_name(rendered, kind).values()]  # fmt: skip
    assert workloads
    for workload in workloads:
        security = workload["spec"]["template"]["spec"]["securityContext"]
        assert security["fsGroupChangePolicy"] == "OnRootMismatch"


def test_mariadb_replicas_start_read_only_with_semi_sync(helm_on_path: str) -> None:
    """The role flags (tested on real servers in test_mariadb_replication) reach the pods."""
    request = make_request("mariadb", "primaryReplica", 3, durability="strict")
    (sts,) = _by_name(render(request), "StatefulSet").values()
    container = _container(sts)
    env = {e["name"]: e.get("value") for e in container["env"]}
    flags = role_flags(request)
    assert env["DBBENCH_PRIMARY_FLAGS"] == " ".join(flags["primary"])
    assert env["DBBENCH_REPLICA_FLAGS"] == " ".join(flags["replica"])
    for ordinal, role in ((0, "primary"), (2, "replica")):
        script = container["command"][2].replace("exec docker-entrypoint.sh", "printf '%s\\n'")
        result = subprocess.run(
            ["bash", "-c", script, "entrypoint", "mariadbd"], capture_output=True, text=True,
            env={"HOSTNAME": f"db-{ordinal}", "PATH": "/usr/bin:/bin",
                 "DBBENCH_PRIMARY_FLAGS": env["DBBENCH_PRIMARY_FLAGS"],
                 "DBBENCH_REPLICA_FLAGS": env["DBBENCH_REPLICA_FLAGS"]},
            check=True,
        )  # fmt: skip
        started = result.stdout.split()
        assert started[0] == "mariadbd"
        assert f"--server-id={ordinal + 1}" in started
        assert started[-len(flags[role]) :] == flags[role]
