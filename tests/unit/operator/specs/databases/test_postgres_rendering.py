"""charts/postgresql as the operator renders it: the official image's environment
contract from the run's Secret, settings as one `-c` argument each (durability
profile, shared_buffers and effective_cache_size from the memory limit, the
user's settings winning), the standby clone init container only for
primaryReplica. Its moving parts for real:
tests/integration/operator/specs/test_postgres_chart.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from dbbench_operator.specs.databases import target_names
from dbbench_operator.specs.databases.rendering import render
from dbbench_operator.specs.databases.request import Hardware
from dbbench_operator.specs.databases.sizing import engine_settings
from tests.fixtures.topology import make_request


def _statefulset(docs: list[dict[str, Any]]) -> dict[str, Any]:
    (sts,) = [d for d in docs if d["kind"] == "StatefulSet"]
    return sts


def _flags(container: dict[str, Any]) -> dict[str, str]:
    """`-c key=value` pairs of the server's arguments."""
    args = container["args"]
    assert args[0] == "postgres"
    pairs = args[1:]
    assert pairs[::2] == ["-c"] * (len(pairs) // 2)
    return dict(arg.split("=", 1) for arg in pairs[1::2])


def test_env_contract_settings_and_volumes(helm_on_path: str) -> None:
    settings = {"work_mem": "64MB", "wal_compression": "on: yes #x"}
    request = make_request("postgresql", "primaryReplica", 3, durability="fast", settings=settings)
    docs = render(request)
    sts = _statefulset(docs)
    pod = sts["spec"]["template"]["spec"]
    (server,) = pod["containers"]
    assert server["image"] == "postgres:17"
    env = {e["name"]: e.get("value") or e["valueFrom"]["secretKeyRef"] for e in server["env"]}
    assert env == {
        "POSTGRES_USER": {"name": "nightly-compare-creds", "key": "root-username"},
        "POSTGRES_PASSWORD": {"name": "nightly-compare-creds", "key": "root-password"},
        "PGDATA": "/var/lib/postgresql/data/pgdata",
        "POSTGRES_DB": "dbbench",
    }
    flags = _flags(server)
    assert flags == {
        "hba_file": "/etc/dbbench/pg_hba.conf",
        "listen_addresses": "*",
        **engine_settings(request),
    }
    # 8Gi limit: a quarter for shared_buffers, three quarters as the planner's cache.
    assert (flags["shared_buffers"], flags["effective_cache_size"]) == ("2048MB", "6144MB")
    assert (flags["synchronous_commit"], flags["fsync"]) == ("off", "on")
    assert flags["work_mem"] == "64MB"
    assert flags["wal_compression"] == "on: yes #x"  # one argument, YAML syntax and all
    assert server["ports"] == [{"name": "postgresql", "containerPort": 5432}]
    mounts = {m["name"]: m["mountPath"] for m in server["volumeMounts"]}
    assert mounts == {"data": "/var/lib/postgresql/data", "hba": "/etc/dbbench", "shm": "/dev/shm"}
    shm = next(v for v in pod["volumes"] if v["name"] == "shm")
    assert shm["emptyDir"] == {"medium": "Memory", "sizeLimit": "256Mi"}
    (clone,) = pod["initContainers"]
    base = target_names.base_name(request)
    clone_env = {e["name"]: e.get("value") for e in clone["env"]}
    assert clone_env["PRIMARY_HOST"] == f"{base}-0.{base}"
    password = next(e for e in clone["env"] if e["name"] == "PGPASSWORD")
    assert password["valueFrom"]["secretKeyRef"]["key"] == "root-password"
    assert "pg_basebackup" in clone["command"][-1]
    assert sts["spec"]["podManagementPolicy"] == "Parallel"
    assert target_names.layout(request).endpoint == f"{base}-0.{base}.perf.svc.cluster.local:5432"


def test_standalone_has_no_clone_and_no_limit_no_sizes(helm_on_path: str) -> None:
    docs = render(make_request("postgresql", "standalone", hardware=Hardware()))
    pod = _statefulset(docs)["spec"]["template"]["spec"]
    assert "initContainers" not in pod
    flags = _flags(pod["containers"][0])
    assert "shared_buffers" not in flags
    assert (flags["synchronous_commit"], flags["fsync"]) == ("on", "on")


@pytest.mark.parametrize(
    ("durability", "commit"), [("fast", "off"), ("safe", "on"), ("strict", "on")]
)
def test_durability_profile_and_user_settings_win(durability: str, commit: str) -> None:
    topology = "primaryReplica" if durability == "strict" else "standalone"
    members = 2 if durability == "strict" else 1
    settings = engine_settings(make_request("postgresql", topology, members, durability=durability))
    assert (settings["synchronous_commit"], settings["fsync"]) == (commit, "on")
    mine = {"synchronous_commit": "local", "shared_buffers": "1GB"}
    given = make_request("postgresql", topology, members, durability=durability, settings=mine)
    overridden = engine_settings(given)
    assert (overridden["synchronous_commit"], overridden["shared_buffers"]) == ("local", "1GB")
