"""Servers started by the tests bind their ports safely (dbbench_local.ports).

The flake this closes: a port found free was taken before the server bound
it ("Bind on TCP/IP port: Address already in use"). Each of mariadbd,
mysqld, postgres, etcd and kube-apiserver is checked. Here the port each server
is first given is really taken (a socket of the test listens on it), and the
real server must still come up, on another port, having said why.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath

import mysql.connector
import pytest

from dbbench_local import controlplane, mariadb, mysqld, ports, postgres
from dbbench_local.ferretdb import start_ferretdb
from dbbench_local.mysqld import MySQLRoot
from dbbench_local.results_service import start_results_service


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A loopback port something else (this test) listens on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", ports.free_port()))
        sock.listen()
        yield int(sock.getsockname()[1])


def taken_first(taken: int) -> Callable[[], int]:
    """free_port as a racing neighbour makes it look: the first port is gone by bind time."""
    handed: list[int] = []

    def pick(ledger: Path | None = None) -> int:
        handed.append(taken if not handed else ports.free_port(ledger))
        return handed[-1]

    return pick


@pytest.mark.integration
def test_mariadbd_whose_port_is_taken_starts_on_another(
    tmp_path: Path, taken_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mariadb, "free_port", taken_first(taken_port))
    server = mariadb.start_mariadb(tmp_path / "mariadb")
    try:
        assert server.port != taken_port
        log = (tmp_path / "mariadb" / "mariadbd.err").read_text()
        assert "Address already in use" in log  # the first attempt really failed
        conn = mysql.connector.connect(**server.connect_args())
        conn.close()
    finally:
        server.stop()


@pytest.mark.integration
def test_mysqld_whose_port_is_taken_starts_on_another(
    mysql_root: MySQLRoot,
    mysql_template: PurePosixPath,
    taken_port: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(mysqld, "free_port", taken_first(taken_port))
    first = mysqld.launch_mysql(mysql_root, template=mysql_template)
    server = mysqld.wait_ready(first)
    try:
        assert (first.port, server.port != taken_port) == (taken_port, True)
        conn = mysql.connector.connect(**server.connect_args())
        conn.close()
    finally:
        first.stop()
        server.stop()


@pytest.mark.integration
def test_postgres_whose_port_is_taken_starts_on_another(
    taken_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    if postgres.find_bin_dir() is None:
        pytest.fail("no PostgreSQL server binaries (/usr/lib/postgresql/*/bin): run `make tools`")
    monkeypatch.setattr(postgres, "free_port", taken_first(taken_port))
    server = postgres.start_postgres()
    try:
        assert server.port != taken_port
        assert "Address already in use" in server.log.read_text()  # the first attempt failed
        with server.connect() as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        server.stop()


@pytest.mark.integration
def test_etcd_and_the_apiserver_whose_ports_are_taken_start_on_others(
    tmp_path: Path, taken_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first port handed out is etcd's client port, the next ones its peer
    # port and (after etcd's retry) the apiserver's: make both services meet it.
    real = ports.free_port
    calls: list[int] = []

    def pick(ledger: Path | None = None) -> int:
        calls.append(0)
        return taken_port if len(calls) in (1, 5) else real(ledger)

    monkeypatch.setattr(controlplane, "free_port", pick)
    with controlplane.running_control_plane(tmp_path / "plane") as plane:
        assert plane.apiserver_port != taken_port
        assert plane.kubectl("get", "namespace", "default").returncode == 0
    assert len(calls) == 6  # etcd: 2 + 2 ports; apiserver: 1 + 1


@pytest.mark.integration
def test_ferretdb_and_the_results_service_bind_port_zero(tmp_path: Path) -> None:
    """No window at all: the kernel picks the port when they bind, /proc says which."""
    ferret = start_ferretdb(tmp_path / "ferretdb")
    results = start_results_service(tmp_path / "results")
    try:
        assert ports.listening_ports(ferret.pid) == {ferret.port}
        assert ports.listening_ports(results.pid) == {results.port}
    finally:
        ferret.stop()
        results.stop()
