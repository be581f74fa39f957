"""The local node's MongoDB-protocol stand-in image (FerretDB): its entrypoint,
run in the image's own root (.cluster/roots/ferretdb, as images.sh assembles it)
as uid 999 with the mongodb chart's standalone command line.

What is checked: the mongod flags the chart passes are translated, every other
mongod option is refused (not ignored), MONGO_INITDB_ROOT_* create a root user
on an empty volume and every command then needs it, a second start keeps the
data, and the server says it is FerretDB. Loopback only; stopped by PID.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pymongo
import pytest
from pymongo.errors import OperationFailure, PyMongoError

from dbbench_local.mariadb import free_port
from tests.integration.images.image_support import (
    REPO,
    ROOTS,
    ImageRoot,
    Server,
    empty_volume,
    kill_all,
    root_skip_reason,
    stop,
    wait_for_path,
)

IMAGE = ImageRoot(
    root=ROOTS / "ferretdb", entrypoint_dir=REPO / "hack/cluster/ferretdb", mount_point="/data/db"
)
_SKIP = root_skip_reason(ROOTS / "ferretdb.stamp", "ferretdb")
ROOT_ENV = {"MONGO_INITDB_ROOT_USERNAME": "root", "MONGO_INITDB_ROOT_PASSWORD": "s3cret:pw"}

pytestmark = [pytest.mark.integration, pytest.mark.skipif(_SKIP is not None, reason=_SKIP or "")]


def _start(volume: Path, env: Mapping[str, str], log: Path, *extra: str) -> Server:
    """charts/mongodb's standalone container: args only, the image's entrypoint."""
    port = free_port()
    command = ["/mnt/docker-entrypoint.sh", "mongod", "--bind_ip=127.0.0.1", f"--port={port}",
               "--dbpath=/data/db", *extra]  # fmt: skip
    return IMAGE.start(volume, port, env, command, log)


def _client(server: Server, **auth: Any) -> pymongo.MongoClient[dict[str, Any]]:
    return pymongo.MongoClient(
        f"mongodb://127.0.0.1:{server.port}/", directConnection=True,
        serverSelectionTimeoutMS=2000, **auth,
    )  # fmt: skip


def _wait_listening(server: Server, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            pytest.fail(f"the server exited with {server.process.returncode}:\n{server.output()}")
        client = _client(server)
        try:
            client.admin.command("hello")
        except PyMongoError:
            time.sleep(0.2)
        else:
            return
        finally:
            client.close()
    pytest.fail(f"no answer within {timeout} s:\n{server.output()}")


@pytest.fixture
def volume(tmp_path: Path) -> Path:
    return empty_volume(tmp_path / "volume")


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    started: list[Server] = []
    yield started
    for server in started:
        stop(server, timeout=30)


AUTH = {"username": "root", "password": "s3cret:pw", "authSource": "admin"}
# The entrypoint's first setup: staged here, complete once this mark is written.
STAGING = "dbbench-initialising"
MARK = ".dbbench-initialised"


def test_root_user_from_the_official_variables_and_auth_enforced(
    volume: Path, tmp_path: Path, servers: list[Server]
) -> None:
    server = _start(volume, ROOT_ENV, tmp_path / "server.log")
    servers.append(server)
    _wait_listening(server)

    anonymous = _client(server)
    with pytest.raises(OperationFailure):
        anonymous.dbbench.t.insert_one({"_id": 1})
    anonymous.close()
    wrong = _client(server, username="root", password="wrong", authSource="admin")
    with pytest.raises(OperationFailure):
        wrong.admin.command("ping")
    wrong.close()

    client = _client(server, **AUTH)
    client.dbbench.t.insert_one({"_id": 1, "v": "x"})
    assert client.dbbench.t.find_one({"_id": 1}) == {"_id": 1, "v": "x"}
    build = client.admin.command("buildInfo")
    assert build["ferretdbVersion"] == "v1.24.0"  # it says what it is
    # w:0 writes leave the connection usable (hack/ferretdb-w0.patch).
    unacknowledged = client.dbbench.get_collection("t", write_concern=pymongo.WriteConcern(w=0))
    unacknowledged.insert_one({"_id": 2})
    assert client.dbbench.t.count_documents({}) in (1, 2)
    deadline = time.monotonic() + 5
    while client.dbbench.t.count_documents({}) != 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert client.dbbench.t.count_documents({}) == 2
    client.close()
    # The SQLite files are on the volume, owned by the pod's uid.
    files = [p for p in volume.iterdir() if p.suffix == ".sqlite"]
    assert files
    assert all(p.stat().st_uid == 999 for p in files)
    assert "s3cret" not in server.output()


def test_a_second_start_keeps_the_data_and_the_user(
    volume: Path, tmp_path: Path, servers: list[Server]
) -> None:
    first = _start(volume, ROOT_ENV, tmp_path / "first.log")
    servers.append(first)
    _wait_listening(first)
    client = _client(first, **AUTH)
    client.dbbench.kept.insert_one({"_id": "marker"})
    client.close()
    stop(first, timeout=30)

    # Another password now: a new setup would create the user with it.
    other = {**ROOT_ENV, "MONGO_INITDB_ROOT_PASSWORD": "another"}
    second = _start(volume, other, tmp_path / "second.log")
    servers.append(second)
    _wait_listening(second)
    client = _client(second, **AUTH)
    assert client.dbbench.kept.find_one() == {"_id": "marker"}
    client.close()
    refused = _client(second, username="root", password="another", authSource="admin")
    with pytest.raises(OperationFailure):
        refused.admin.command("ping")
    refused.close()


def test_without_the_variables_there_is_no_authentication(
    volume: Path, tmp_path: Path, servers: list[Server]
) -> None:
    server = _start(volume, {}, tmp_path / "server.log")
    servers.append(server)
    _wait_listening(server)
    client = _client(server)
    client.dbbench.t.insert_one({"_id": 1})
    assert client.dbbench.t.count_documents({}) == 1
    client.close()


@pytest.mark.parametrize(
    "option",
    ["--replSet=rs0", "--keyFile=/keyfile/keyfile", "--configsvr", "--wiredTigerCacheSizeGB=1"],
)
def test_mongod_options_it_cannot_honour_are_refused(
    volume: Path, tmp_path: Path, option: str
) -> None:
    server = _start(volume, ROOT_ENV, tmp_path / "server.log", option)
    try:
        assert server.process.wait(timeout=30) != 0
    finally:
        stop(server, timeout=30)
    assert f"mongod option {option} cannot be honoured" in server.output()
    assert not list(volume.iterdir())


def test_half_of_the_root_variables_is_refused(volume: Path, tmp_path: Path) -> None:
    server = _start(volume, {"MONGO_INITDB_ROOT_USERNAME": "root"}, tmp_path / "server.log")
    try:
        assert server.process.wait(timeout=30) != 0
    finally:
        stop(server, timeout=30)
    assert "MONGO_INITDB_ROOT_PASSWORD" in server.output()


def test_a_first_setup_killed_part_way_is_done_again(
    volume: Path, tmp_path: Path, servers: list[Server]
) -> None:
    """FerretDB creates `admin`, then the user, and skips both once `admin` exists;
    killed once `admin` exists (every process at once, as a container ends), the
    next start sets up again and the user logs in (docs/decisions.md)."""
    first = _start(volume, ROOT_ENV, tmp_path / "first.log")
    servers.append(first)
    wait_for_path(first, volume / STAGING / "admin.sqlite", timeout=30)
    kill_all(first)
    assert (volume / STAGING).is_dir(), first.output()
    assert not (volume / STAGING / MARK).exists(), first.output()
    second = _start(volume, ROOT_ENV, tmp_path / "second.log")
    servers.append(second)
    _wait_listening(second)
    client = _client(second, **AUTH)
    client.dbbench.t.insert_one({"_id": 1})
    assert client.dbbench.t.count_documents({}) == 1
    client.close()
    assert "the first initialisation did not complete" in second.output()
    assert not (volume / STAGING).exists()
    assert (volume / "admin.sqlite").is_file()


def test_a_first_setup_stopped_while_moving_its_files_finishes_the_move(
    volume: Path, tmp_path: Path, servers: list[Server]
) -> None:
    first = _start(volume, ROOT_ENV, tmp_path / "first.log")
    servers.append(first)
    _wait_listening(first)
    stop(first, timeout=30)
    # What a kill half-way through the move leaves: the mark, the admin database
    # still staged.
    (volume / STAGING).mkdir()
    (volume / STAGING / MARK).touch()
    (volume / "admin.sqlite").rename(volume / STAGING / "admin.sqlite")
    shutil.chown(volume / STAGING, 999, 999)
    second = _start(volume, ROOT_ENV, tmp_path / "second.log")
    servers.append(second)
    _wait_listening(second)
    client = _client(second, **AUTH)
    client.admin.command("ping")
    client.close()
    assert "finishing the move" in second.output()
    assert not (volume / STAGING).exists()
