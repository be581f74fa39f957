"""charts/postgresql as the operator renders it, and its two moving parts for real.

Rendering: the official image's environment contract from the run's Secret,
settings as one `-c` argument each (durability profile, shared_buffers and
effective_cache_size from the memory limit, the user's settings winning),
the standby clone init container only for primaryReplica. Real servers: the
rendered client-authentication file admits replication as a primary's
pg_hba_file, and the rendered init script, run twice as the server account,
copies the primary into a standby the operator's setup then makes stream.
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from dbbench_contract.api import ALLOWED_SETTINGS
from dbbench_local.postgres import PostgresServer, start_data_dir, start_postgres, work_dir_for
from dbbench_operator.specs.databases import target_names
from dbbench_operator.specs.databases.rendering import render
from dbbench_operator.specs.databases.request import Hardware
from dbbench_operator.specs.databases.sizing import engine_settings
from dbbench_operator.targets.sql.mysql_replication import Member, ReplicationCredentials
from dbbench_operator.targets.sql.pg_session import connect
from dbbench_operator.targets.sql.postgres_replication import ensure_streaming
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


def _rendered_files(helm: str) -> tuple[str, str]:
    """The clone init script and pg_hba.conf of a rendered primaryReplica target."""
    docs = render(make_request("postgresql", "primaryReplica", 2))
    (clone,) = _statefulset(docs)["spec"]["template"]["spec"]["initContainers"]
    (hba,) = [d for d in docs if d["kind"] == "ConfigMap"]
    return clone["command"][-1], hba["data"]["pg_hba.conf"]


@pytest.mark.integration
def test_clone_script_and_hba_file_make_a_standby(helm_on_path: str, tmp_path: Path) -> None:
    script, hba = _rendered_files(helm_on_path)
    shared = Path(tempfile.mkdtemp(prefix="dbbench-hba-"))
    shared.chmod(0o755)  # the server account reads the file here
    (shared / "pg_hba.conf").write_text(hba)
    primary = start_postgres(["-c", f"hba_file={shared / 'pg_hba.conf'}"])
    work = work_dir_for(primary)
    standby = None
    try:
        # The script as the init container runs it: as the server account, twice
        # (a restarted pod runs it again over the finished copy: a no-op).
        env = {
            "PATH": f"{primary.bin_dir}:/usr/bin:/bin",
            "PGDATA": str(work / "data"),
            "HOSTNAME": "db-1",
            "PRIMARY_HOST": "127.0.0.1",
            "POSTGRES_USER": primary.user,
            "PGPASSWORD": primary.password,
        }
        patched = script.replace("-p 5432", f"-p {primary.port}")
        assert patched != script
        account = primary.account
        for _ in range(2):
            result = subprocess.run(
                ["bash", "-ec", patched], env=env, capture_output=True, text=True, timeout=120,
                check=False, user=account.uid if account else None,
                group=account.gid if account else None, extra_groups=[] if account else None,
            )  # fmt: skip
            assert result.returncode == 0, result.stdout + result.stderr
        assert (work / "data" / "standby.signal").exists()
        assert not (work / "data.partial").exists()
        standby = start_data_dir(primary, work)
        sessions = [connect("127.0.0.1", s.port, s.user, s.password) for s in (primary, standby)]
        members = [
            Member(f"db-{i}", "127.0.0.1", s.port, sess)
            for i, (s, sess) in enumerate(zip((primary, standby), sessions, strict=True))
        ]
        creds = ReplicationCredentials("dbbench_repl", "repl-pw")
        for _ in range(100):
            result = ensure_streaming(members[0], members[1:], creds)
            if result.ready:
                break
            time.sleep(0.3)
        assert result.ready, result.message
        sessions[0].execute("CREATE TABLE t AS SELECT 42 AS v")
        for _ in range(100):
            if sessions[1].query("SELECT to_regclass('t') IS NOT NULL AS there")[0]["there"]:
                break
            time.sleep(0.1)
        assert sessions[1].query("SELECT v FROM t") == [{"v": 42}]
        # Replication as dbbench_repl over TCP: admitted by the chart's file, not the fixture's.
        rows = sessions[0].query("SELECT usename, client_addr::text FROM pg_stat_replication")
        assert rows == [{"usename": "dbbench_repl", "client_addr": "127.0.0.1/32"}]
        shown = sessions[0].query("SHOW hba_file")[0]["hba_file"]
        assert shown == str(shared / "pg_hba.conf")
        for session in sessions:
            session.close()
    finally:
        if standby is not None:
            standby.stop()
        primary.stop()
        subprocess.run(["rm", "-rf", str(shared), str(work)], check=False)


@pytest.mark.integration
def test_every_allowed_setting_exists_in_postgresql(postgres_server: PostgresServer) -> None:
    allowed = list(ALLOWED_SETTINGS["postgresql"])
    with postgres_server.connect() as conn:
        rows = conn.execute("SELECT name FROM pg_settings WHERE name = ANY(%s)", [allowed])
        found = {row[0] for row in rows.fetchall()}
    assert sorted(set(allowed) - found) == []


@pytest.mark.integration
@pytest.mark.parametrize("durability", ["fast", "safe"])
def test_rendered_settings_take_effect_in_a_real_server(helm_on_path: str, durability: str) -> None:
    """The chart's `-c` arguments as a server's own flags: every computed setting is
    accepted and in force (2 GiB memory limit: 512MB shared_buffers)."""
    memory = {"limits": {"cpu": "1", "memory": "2Gi"}, "requests": {"cpu": "1", "memory": "2Gi"}}
    hardware = Hardware(resources=memory)
    settings = {"work_mem": "8MB"}
    request = make_request(
        "postgresql", "standalone", durability=durability, hardware=hardware, settings=settings
    )
    flags = _flags(_statefulset(render(request))["spec"]["template"]["spec"]["containers"][0])
    wanted = {k: v for k, v in flags.items() if k not in ("hba_file", "listen_addresses")}
    assert set(wanted) == {"synchronous_commit", "fsync", "shared_buffers",
                           "effective_cache_size", "work_mem"}  # fmt: skip
    server = start_postgres(
        [arg for key, value in wanted.items() for arg in ("-c", f"{key}={value}")]
    )
    try:
        with server.connect() as conn:
            shown = {key: conn.execute(f"SHOW {key}").fetchone()[0] for key in wanted}  # type: ignore[index]
    finally:
        server.stop()
    assert shown == {
        "synchronous_commit": "off" if durability == "fast" else "on", "fsync": "on",
        "shared_buffers": "512MB", "effective_cache_size": "1536MB", "work_mem": "8MB",
    }  # fmt: skip
