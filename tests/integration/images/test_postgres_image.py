"""The local node's PostgreSQL image: its entrypoint and the chart's init script,
run in the image's own root.

hack/cluster/images.sh builds the image from a cached trixie root
(.cluster/roots/postgresql, PostgreSQL 17). These tests run
hack/cluster/postgres/docker-entrypoint.sh chrooted in that root as uid 999,
with the environment and arguments charts/postgresql renders (helm), so what
is checked is the image's content (packages, PATH, directories) and the
official image's environment contract, without a cluster or a container
engine. The servers listen on 127.0.0.1 only; every one is stopped by its PID.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import shutil
import signal
import subprocess
import tarfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import psycopg
import pytest

from dbbench_local.cluster import IMAGES_DIR
from dbbench_local.mariadb import free_port
from dbbench_operator.specs.databases.rendering import render
from dbbench_operator.targets.sql.mysql_replication import Member, ReplicationCredentials
from dbbench_operator.targets.sql.pg_session import connect
from dbbench_operator.targets.sql.postgres_replication import ensure_streaming
from tests.fixtures.topology import make_request
from tests.integration.images.image_support import (
    REPO,
    ROOTS,
    ImageRoot,
    Server,
    empty_volume,
    root_skip_reason,
    stop,
)

MAJOR = "17"
# The image's ENV PATH (images.sh): the major's own binaries first.
IMAGE_PATH = (
    f"/usr/lib/postgresql/{MAJOR}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)
MOUNT = "/var/lib/postgresql/data"  # the chart's volume mount
_SKIP = root_skip_reason(ROOTS / "postgresql.stamp", "postgresql")
# Quotes, a backslash, a dollar, a space and a hash: initdb's password file and
# the environment must carry them unchanged.
PASSWORD = "pa'ss\\wo\"rd $HOME #1"
USER = "root"  # what the operator's Secret names the superuser

pytestmark = [pytest.mark.integration, pytest.mark.skipif(_SKIP is not None, reason=_SKIP or "")]


def _helm() -> str:
    found = os.environ.get("DBBENCH_HELM") or shutil.which("helm")
    if found is None:
        pytest.fail("helm not found on PATH: run `make tools` and put .tools/bin on PATH")
    os.environ["DBBENCH_HELM"] = found
    return found


@pytest.fixture(scope="module")
def chart() -> dict[str, Any]:
    return chart_parts()


def chart_parts() -> dict[str, Any]:
    """The rendered primaryReplica StatefulSet's server container, clone script and
    pg_hba.conf (shared_buffers set small: the tests start several servers)."""
    _helm()
    request = make_request("postgresql", "primaryReplica", 2,
                           settings={"shared_buffers": "32MB"})  # fmt: skip
    docs = render(request)
    (sts,) = [d for d in docs if d["kind"] == "StatefulSet"]
    (hba,) = [d for d in docs if d["kind"] == "ConfigMap"]
    pod = sts["spec"]["template"]["spec"]
    (clone,) = pod["initContainers"]
    (server,) = pod["containers"]
    assert next(m["mountPath"] for m in server["volumeMounts"]) == MOUNT
    return {"server": server, "clone": clone, "hba": hba["data"]["pg_hba.conf"]}


def _env(container: Mapping[str, Any], secret: Mapping[str, str]) -> dict[str, str]:
    """The container's environment, with the Secret's keys given here."""
    env: dict[str, str] = {"PATH": IMAGE_PATH, "LANG": "C.UTF-8"}
    for item in container["env"]:
        if "value" in item:
            env[item["name"]] = item["value"]
        else:
            env[item["name"]] = secret[item["valueFrom"]["secretKeyRef"]["key"]]
    return env


def _server_args(container: Mapping[str, Any], port: int) -> list[str]:
    """The chart's arguments, on loopback at `port`, with its hba file under /mnt."""
    moved = {"hba_file=/etc/dbbench/pg_hba.conf": "hba_file=/mnt/pg_hba.conf",
             "listen_addresses=*": "listen_addresses=127.0.0.1"}  # fmt: skip
    args = [moved.get(a, a) for a in container["args"]]
    assert "hba_file=/mnt/pg_hba.conf" in args
    assert "listen_addresses=127.0.0.1" in args
    return [*args, "-c", f"port={port}"]


SECRET = {"root-username": USER, "root-password": PASSWORD}


@pytest.fixture
def mnt(tmp_path: Path, chart: dict[str, Any]) -> Path:
    """/mnt of the chroot: the entrypoint, the chart's pg_hba.conf, init files."""
    path = tmp_path / "mnt"
    (path / "initdb").mkdir(parents=True)
    shutil.copy2(REPO / "hack/cluster/postgres/docker-entrypoint.sh", path)
    (path / "pg_hba.conf").write_text(chart["hba"])
    path.chmod(0o755)
    return path


def _image(mnt: Path, *extra_tmpfs: str) -> ImageRoot:
    return ImageRoot(root=ROOTS / "postgresql", entrypoint_dir=mnt, mount_point=MOUNT,
                     tmpfs_dirs=("/run/postgresql", *extra_tmpfs))  # fmt: skip


def _start(
    image: ImageRoot, volume: Path, env: Mapping[str, str], args: Sequence[str], log: Path,
    prelude: str = "",
) -> Server:  # fmt: skip
    """The image's entrypoint with the chart's container arguments."""
    port = int(next(a.split("=")[1] for a in args if a.startswith("port=")))
    command = ["bash", "-ec", f'{prelude}exec /mnt/docker-entrypoint.sh "$@"', "entrypoint", *args]
    return image.start(volume, port, env, command, log)


def _connect(port: int, password: str = PASSWORD, dbname: str = "postgres") -> Any:
    return psycopg.connect(host="127.0.0.1", port=port, user=USER, password=password,
                           dbname=dbname, connect_timeout=5, autocommit=True)  # fmt: skip


def _wait_ready(server: Server, password: str = PASSWORD, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            pytest.fail(f"the server exited with {server.process.returncode}:\n{server.output()}")
        try:
            _connect(server.port, password).close()
        except psycopg.OperationalError as exc:
            if "password authentication failed" in str(exc):
                raise
            time.sleep(0.3)
        else:
            return
    pytest.fail(f"no superuser login over TCP within {timeout} s:\n{server.output()}")


def fast_stop(server: Server) -> None:
    """SIGINT (the image's STOPSIGNAL: a fast shutdown), then image_support's stop."""
    if server.process.poll() is None:
        server.process.send_signal(signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):  # stop() below kills it
            server.process.wait(timeout=60)
    stop(server)


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    started: list[Server] = []
    yield started
    for server in reversed(started):
        fast_stop(server)


def test_initialises_an_empty_volume_with_the_official_contract(
    chart: dict[str, Any], mnt: Path, tmp_path: Path, servers: list[Server]
) -> None:
    volume = empty_volume(tmp_path / "volume")
    env = _env(chart["server"], SECRET)
    assert env["PGDATA"] == f"{MOUNT}/pgdata"
    assert env["POSTGRES_DB"] == "dbbench"
    args = _server_args(chart["server"], free_port())
    server = _start(_image(mnt), volume, env, args, tmp_path / "server.log")
    servers.append(server)
    _wait_ready(server)

    with _connect(server.port, dbname="dbbench") as conn:
        row = conn.execute(
            "SELECT current_user, current_database(), current_setting('server_version'),"
            " current_setting('data_directory'), current_setting('hba_file'),"
            " current_setting('shared_buffers'), current_setting('server_encoding'),"
            " (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)"
        ).fetchone()
        assert row is not None
        user, database, version, datadir, hba, shared_buffers, encoding, superuser = row
        assert (user, database, superuser) == (USER, "dbbench", True)
        assert version.startswith(f"{MAJOR}.")
        assert (datadir, hba) == (f"{MOUNT}/pgdata", "/mnt/pg_hba.conf")
        assert (shared_buffers, encoding) == ("32MB", "UTF8")
        # The official image's extra `host all all all <password_encryption>` line
        # is in the data directory's own file (unused: the chart names its own).
        own = conn.execute("SELECT pg_read_file('pg_hba.conf')").fetchone()
        assert own is not None
        assert own[0].rstrip().endswith("host all all all scram-sha-256")
        # The password is stored as SCRAM, not in clear.
        stored = conn.execute("SELECT rolpassword FROM pg_authid WHERE rolname = %s", [USER])
        secret_row = stored.fetchone()
        assert secret_row is not None
        assert secret_row[0].startswith("SCRAM-SHA-256$")
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        _connect(server.port, password="wrong")

    # The server runs as uid 999, with its data directory 0700 on the volume.
    data = volume / "pgdata"
    assert (data / "PG_VERSION").read_text().strip() == MAJOR
    assert data.stat().st_uid == 999
    assert data.stat().st_mode & 0o777 == 0o700
    assert "initialisation done" in server.output()
    assert PASSWORD not in server.output()


def test_init_files_run_once_after_the_database_exists(
    chart: dict[str, Any], mnt: Path, tmp_path: Path, servers: list[Server]
) -> None:
    (mnt / "initdb" / "1-table.sql").write_text("CREATE TABLE seeded (v text);\n")
    with gzip.open(mnt / "initdb" / "2-rows.sql.gz", "wt") as rows:
        rows.write("INSERT INTO seeded VALUES ('gz');\n")
    (mnt / "initdb" / "3-note.sh").write_text('echo "init script ran as $(id -u) in $PGDATA"\n')
    image = _image(mnt, "/docker-entrypoint-initdb.d")
    volume = empty_volume(tmp_path / "volume")
    args = _server_args(chart["server"], free_port())
    prelude = "cp /mnt/initdb/* /docker-entrypoint-initdb.d/ && "
    server = _start(image, volume, _env(chart["server"], SECRET), args, tmp_path / "server.log",
                    prelude)  # fmt: skip
    servers.append(server)
    _wait_ready(server)
    with _connect(server.port, dbname="dbbench") as conn:
        assert conn.execute("SELECT v FROM seeded").fetchall() == [("gz",)]
    assert f"init script ran as 999 in {MOUNT}/pgdata" in server.output()


def test_a_second_start_keeps_the_data_and_the_password(
    chart: dict[str, Any], mnt: Path, tmp_path: Path, servers: list[Server]
) -> None:
    volume = empty_volume(tmp_path / "volume")
    env = _env(chart["server"], SECRET)
    first = _start(_image(mnt), volume, env, _server_args(chart["server"], free_port()),
                   tmp_path / "first.log")  # fmt: skip
    servers.append(first)
    _wait_ready(first)
    with _connect(first.port, dbname="dbbench") as conn:
        conn.execute("CREATE TABLE kept AS SELECT 'marker'::text AS v")
    fast_stop(first)
    assert first.process.returncode == 0, first.output()

    # Another password now: a re-initialisation would apply it.
    other = _env(chart["server"], {**SECRET, "root-password": "another"})
    second = _start(_image(mnt), volume, other, _server_args(chart["server"], free_port()),
                    tmp_path / "second.log")  # fmt: skip
    servers.append(second)
    _wait_ready(second)
    assert "starting without initialisation" in second.output()
    assert "initialising" not in second.output()
    with _connect(second.port, dbname="dbbench") as conn:
        assert conn.execute("SELECT v FROM kept").fetchall() == [("marker",)]
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        _connect(second.port, password="another")


def test_an_empty_volume_without_a_password_is_refused(
    chart: dict[str, Any], mnt: Path, tmp_path: Path
) -> None:
    volume = empty_volume(tmp_path / "volume")
    env = {k: v for k, v in _env(chart["server"], SECRET).items() if k != "POSTGRES_PASSWORD"}
    server = _start(_image(mnt), volume, env, _server_args(chart["server"], free_port()),
                    tmp_path / "server.log")  # fmt: skip
    try:
        assert server.process.wait(timeout=60) != 0
    finally:
        stop(server)
    assert "POSTGRES_PASSWORD" in server.output()
    assert not (volume / "pgdata" / "PG_VERSION").exists()


def test_password_from_a_file_and_root_drops_to_postgres(
    chart: dict[str, Any], mnt: Path, tmp_path: Path, servers: list[Server]
) -> None:
    volume = empty_volume(tmp_path / "volume")
    (mnt / "password").write_text("from-a-file")
    env = {k: v for k, v in _env(chart["server"], SECRET).items() if k != "POSTGRES_PASSWORD"}
    env["POSTGRES_PASSWORD_FILE"] = "/mnt/password"
    image = ImageRoot(ROOTS / "postgresql", mnt, MOUNT, ("/run/postgresql",), user="0:0")
    server = _start(image, volume, env, _server_args(chart["server"], free_port()),
                    tmp_path / "server.log")  # fmt: skip
    servers.append(server)
    _wait_ready(server, password="from-a-file")
    # Started as root (docker run without --user), the server runs as postgres (999).
    assert (volume / "pgdata" / "PG_VERSION").stat().st_uid == 999


def test_the_chart_clone_script_makes_a_standby_that_streams(
    chart: dict[str, Any], mnt: Path, tmp_path: Path, servers: list[Server]
) -> None:
    """The primaryReplica init container's script, run in the image as uid 999 on an
    empty volume (bash and pg_basebackup from the image's PATH), copies a primary
    that runs the image; the copy starts as a standby and the operator's setup
    makes it stream."""
    env = _env(chart["server"], SECRET)
    primary_port = free_port()
    args = _server_args(chart["server"], primary_port)
    volume = empty_volume(tmp_path / "primary")
    primary = _start(_image(mnt), volume, env, args, tmp_path / "primary.log")
    servers.append(primary)
    _wait_ready(primary)

    script = chart["clone"]["command"][-1]
    patched = script.replace("-p 5432", f"-p {primary_port}")
    assert patched != script
    assert chart["clone"]["command"][:2] == ["bash", "-ec"]
    clone_env = {**_env(chart["clone"], SECRET), "HOSTNAME": "db-1", "PRIMARY_HOST": "127.0.0.1"}
    standby_volume = empty_volume(tmp_path / "standby")
    for attempt in range(2):  # a restarted pod runs it again over the finished copy
        clone = _image(mnt).start(standby_volume, 0, clone_env, ["bash", "-ec", patched],
                                  tmp_path / f"clone-{attempt}.log")  # fmt: skip
        assert clone.process.wait(timeout=180) == 0, clone.output()
    assert (standby_volume / "pgdata" / "standby.signal").exists()
    assert not (standby_volume / "pgdata.partial").exists()

    standby = _start(_image(mnt), standby_volume, env, _server_args(chart["server"], free_port()),
                     tmp_path / "standby.log")  # fmt: skip
    servers.append(standby)
    _wait_ready(standby)
    assert "starting without initialisation" in standby.output()
    sessions = [connect("127.0.0.1", s.port, USER, PASSWORD) for s in (primary, standby)]
    try:
        pairs = zip((primary, standby), sessions, strict=True)
        members = [Member(f"db-{i}", "127.0.0.1", s.port, c) for i, (s, c) in enumerate(pairs)]
        credentials = ReplicationCredentials("dbbench_repl", "repl-pw")
        for _ in range(100):
            result = ensure_streaming(members[0], members[1:], credentials)
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
        assert sessions[1].query("SELECT pg_is_in_recovery() AS r") == [{"r": True}]
    finally:
        for session in sessions:
            session.close()


def _archive_config(archive: Path) -> dict[str, Any]:
    """The image configuration inside an OCI archive (podman save --format oci-archive)."""
    with tarfile.open(archive) as tar:

        def blob(digest: str) -> Any:
            member = tar.extractfile(f"blobs/sha256/{digest.split(':', 1)[1]}")
            assert member is not None
            return json.load(member)

        index_file = tar.extractfile("index.json")
        assert index_file is not None
        manifest = blob(json.load(index_file)["manifests"][0]["digest"])
        config: dict[str, Any] = blob(manifest["config"]["digest"])
        return config


def test_the_archive_declares_what_the_chart_needs() -> None:
    archive = IMAGES_DIR / "postgresql.tar"
    if not archive.is_file():
        pytest.skip(f"no {archive}: run hack/cluster/images.sh postgresql")
    config = _archive_config(archive)["config"]
    env = dict(item.split("=", 1) for item in config["Env"])
    assert env["PATH"] == IMAGE_PATH  # what these tests run with
    assert env["PGDATA"] == "/var/lib/postgresql/data"
    assert config["Entrypoint"] == ["docker-entrypoint.sh"]
    assert config["Cmd"] == ["postgres"]
    # A fast shutdown, as the official image (podman records the number).
    assert config["StopSignal"] in ("SIGINT", str(int(signal.SIGINT)))
    root = ROOTS / "postgresql"
    for tool in ("postgres", "pg_basebackup", "initdb", "pg_ctl", "psql"):
        assert (root / f"usr/lib/postgresql/{MAJOR}/bin" / tool).is_file(), tool
    assert (root / "usr/bin/bash").is_file()
    passwd = (root / "etc/passwd").read_text()
    assert "postgres:x:999:999:" in passwd
