"""charts/postgresql as the operator renders it, its two moving parts for real.

The rendered client-authentication file admits replication as a primary's
pg_hba_file, and the rendered init script, run twice as the server account,
copies the primary into a standby the operator's setup then makes stream; the
rendered settings are in force in a real server. The rendering itself:
tests/unit/operator/specs/databases/test_postgres_rendering.py.
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from dbbench_contract.api import ALLOWED_SETTINGS
from dbbench_local.postgres import PostgresServer, start_data_dir, start_postgres, work_dir_for
from dbbench_operator.specs.databases.rendering import render
from dbbench_operator.specs.databases.request import Hardware
from dbbench_operator.targets.sql.mysql_replication import Member, ReplicationCredentials
from dbbench_operator.targets.sql.pg_session import connect
from dbbench_operator.targets.sql.postgres_replication import ensure_streaming
from tests.fixtures.topology import make_request
from tests.unit.operator.specs.databases.test_postgres_rendering import _flags, _statefulset


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
