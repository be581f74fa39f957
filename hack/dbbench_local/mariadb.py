"""A real MariaDB server for tests and benchmarks, started and stopped by PID.

`start_mariadb` gives every server a fresh data directory and a private
tmpdir, starts `mariadbd` on a free loopback port with binary logging on (so
replication tests can use the same servers), and leaves root reachable over
TCP with a password: root@localhost, root@'127.0.0.1' and root@'%' all have
ALL PRIVILEGES WITH GRANT OPTION. The pytest fixtures in
tests/fixtures/mariadb.py, the bench and the local tooling use it; whoever
starts a server stops it.

The data directory is a copy of one `mariadb-install-db` per process (as
tests/fixtures/mysql.py does with `mysqld --initialize`): the install is the
same for every server (no account has a password until `_secure` gives it
one) and costs 0.35 s of CPU and 0.4 s of wall, the copy 0.03 s; replication
tests start three servers each.
"""

from __future__ import annotations

import atexit
import functools
import os
import secrets
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import mysql.connector

from dbbench_local.ports import PortInUseError, log_size, port_in_use_in, retry_on_port_in_use
from dbbench_local.processes import free_port, log_tail, stop_pid

__all__ = ["MariaDBServer", "free_port", "start_mariadb"]

MARIADBD = "/usr/sbin/mariadbd"
INSTALL_DB = "mariadb-install-db"
START_TIMEOUT_S = 60.0
# A 16 MiB redo log instead of the 96 MiB default: tests run dozens of servers
# at once and disk is scarce on CI machines; a test that sets the size passes
# its own value in extra_args, which comes later and wins.
SMALL_REDO = ("--innodb-log-file-size=16M",)
STOP_TIMEOUT_S = 30.0
# sockaddr_un.sun_path holds 108 bytes; pytest's tmp paths can be longer.
MAX_SOCKET_PATH = 100


@dataclass
class MariaDBServer:
    port: int
    socket: Path
    datadir: Path
    server_id: int
    pid: int
    root_password: str
    _process: subprocess.Popen[bytes] | None = field(default=None, repr=False, compare=False)
    _argv: tuple[str, ...] = field(default=(), repr=False, compare=False)
    _log: Path | None = field(default=None, repr=False, compare=False)

    def connect_args(self) -> dict[str, object]:
        """Arguments for mysql.connector.connect (and our runner's target)."""
        return {
            "host": "127.0.0.1",
            "port": self.port,
            "user": "root",
            "password": self.root_password,
        }

    def stop(self) -> None:
        """SIGTERM by PID, wait, SIGKILL after a timeout; idempotent."""
        stop_pid(self.pid, self._process, STOP_TIMEOUT_S)

    def restart(self) -> None:
        """Stop, then start mariadbd again on the same data directory and port: what
        a database pod's restart does (the buffer pool starts empty unless the
        server reloads a dump, which `--innodb-buffer-pool-load-at-startup=0` stops)."""
        if not self._argv or self._log is None:
            raise RuntimeError("restart: this server was not started by start_mariadb")
        self.stop()
        log_start = log_size(self._log)
        process = subprocess.Popen(
            self._argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self.pid, self._process = process.pid, process
        try:
            _wait_ready(process, self.socket, self._log, self.root_password, log_start).close()
        except BaseException:
            self.stop()
            raise


def _socket_path(run_dir: Path) -> Path:
    candidate = run_dir / "mariadbd.sock"
    if len(str(candidate)) <= MAX_SOCKET_PATH:
        return candidate
    short_dir = Path(tempfile.mkdtemp(prefix="mdb-"))
    return short_dir / "mariadbd.sock"


def _install(datadir: Path, tmpdir: Path, log: Path) -> None:
    argv = [
        INSTALL_DB,
        "--no-defaults",
        f"--datadir={datadir}",
        # Passed on to the bootstrap mariadbd: a shared /tmp once made it fail
        # with "Could not remove temporary table '/tmp/#sql-temptable-...'".
        f"--tmpdir={tmpdir}",
        "--user=root",
        "--auth-root-authentication-method=normal",
        "--skip-test-db",
        *SMALL_REDO,
    ]
    with log.open("wb") as out:
        result = subprocess.run(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            check=False,
            env={**os.environ, "TMPDIR": str(tmpdir)},
        )
    if result.returncode != 0:
        raise RuntimeError(f"mariadb-install-db failed ({result.returncode}):\n{log_tail(log)}")


@functools.cache
def _template() -> Path:
    """This process's installed data directory, removed when the process exits."""
    base = Path(tempfile.mkdtemp(prefix="dbbench-mariadb-template-"))
    atexit.register(shutil.rmtree, base, ignore_errors=True)
    (base / "tmp").mkdir()
    _install(base / "data", base / "tmp", base / "install.log")
    return base / "data"


def _wait_ready(
    process: subprocess.Popen[bytes], sock: Path, log: Path, password: str = "", log_start: int = 0
) -> mysql.connector.abstracts.MySQLConnectionAbstract:
    deadline = time.monotonic() + START_TIMEOUT_S
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        if process.poll() is not None:
            if port_in_use_in(log, since=log_start):
                raise PortInUseError(f"mariadbd: port taken before it bound it:\n{log_tail(log)}")
            raise RuntimeError(
                f"mariadbd exited with {process.returncode} during start-up:\n{log_tail(log)}"
            )
        if sock.exists():
            try:
                conn = mysql.connector.connect(
                    unix_socket=str(sock), user="root", password=password
                )
            except mysql.connector.Error as exc:
                last_error = exc
            else:
                return conn  # type: ignore[return-value]
        time.sleep(0.2)
    raise RuntimeError(
        f"mariadbd did not accept connections within {START_TIMEOUT_S:.0f}s "
        f"(last error: {last_error}):\n{log_tail(log)}"
    )


def _secure(conn: mysql.connector.abstracts.MySQLConnectionAbstract, password: str) -> None:
    """Drop anonymous accounts (they shadow root@localhost) and give root a password."""
    # The password is hex (secrets.token_hex), so quoting it inline is safe and
    # avoids the connector's parameter substitution clashing with the '%' host.
    pw = f"'{password}'"
    statements = [
        "DELETE FROM mysql.global_priv WHERE User=''",
        "FLUSH PRIVILEGES",
        f"ALTER USER 'root'@'localhost' IDENTIFIED BY {pw}",
        f"CREATE OR REPLACE USER 'root'@'127.0.0.1' IDENTIFIED BY {pw}",
        "GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION",
        f"CREATE OR REPLACE USER 'root'@'%' IDENTIFIED BY {pw}",
        "GRANT ALL PRIVILEGES ON *.* TO 'root'@'%' WITH GRANT OPTION",
        "FLUSH PRIVILEGES",
    ]
    cursor = conn.cursor()
    try:
        for statement in statements:
            cursor.execute(statement)
        conn.commit()
    finally:
        cursor.close()
        conn.close()


@dataclass(frozen=True)
class _Files:
    """Where one server keeps its data, tmpdir, socket and error log."""

    base: Path
    sock: Path

    @property
    def datadir(self) -> Path:
        return self.base / "data"

    @property
    def tmpdir(self) -> Path:
        return self.base / "tmp"  # every server its own: never the shared /tmp

    @property
    def log(self) -> Path:
        return self.base / "mariadbd.err"


def start_mariadb(
    base_dir: Path, *, server_id: int = 1, extra_args: Sequence[str] = ()
) -> MariaDBServer:
    """A fresh data directory under base_dir (a copy of the installed one), and
    mariadbd started on it."""
    base_dir = Path(base_dir)
    base_dir.mkdir(parents=True, exist_ok=True)
    files = _Files(base_dir, _socket_path(base_dir))
    files.tmpdir.mkdir(exist_ok=True)
    shutil.copytree(_template(), files.datadir)
    password = secrets.token_hex(12)
    # A new port per attempt; the data directory is reused (nothing was served from it).
    return retry_on_port_in_use(lambda: _launch(files, server_id, extra_args, password))


def _launch(
    files: _Files, server_id: int, extra_args: Sequence[str], password: str
) -> MariaDBServer:
    port = free_port()
    argv = [
        MARIADBD,
        "--no-defaults",
        "--user=root",
        "--bind-address=127.0.0.1",
        f"--port={port}",
        f"--socket={files.sock}",
        f"--datadir={files.datadir}",
        f"--tmpdir={files.tmpdir}",
        f"--pid-file={files.base / 'mariadbd.pid'}",
        f"--log-error={files.log}",
        f"--server-id={server_id}",
        "--log-bin=mysql-bin",
        "--binlog-format=ROW",
        "--log-slave-updates",
        "--innodb-buffer-pool-size=128M",
        "--skip-name-resolve",
        *SMALL_REDO,
        *extra_args,
    ]
    log_start = log_size(files.log)
    process = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    server = MariaDBServer(
        port=port,
        socket=files.sock,
        datadir=files.datadir,
        server_id=server_id,
        pid=process.pid,
        root_password=password,
        _process=process,
        _argv=tuple(argv),
        _log=files.log,
    )
    try:
        conn = _wait_ready(process, files.sock, files.log, log_start=log_start)
        _secure(conn, server.root_password)
    except BaseException:
        server.stop()
        raise
    return server


def mariadb_available() -> bool:
    return Path(MARIADBD).exists() and shutil.which(INSTALL_DB) is not None
