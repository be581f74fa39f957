"""A real Oracle MySQL (9.7, Debian unstable) for tests, run in a chroot, stopped by PID.

Debian stable carries no Oracle MySQL, so `make tools` (hack/tools.sh) builds
a debootstrap root of the unstable suite holding `mysql-server-core` under
$TOOLS_DIR/mysql-root. `mysqld` runs chrooted into it; its data directory,
tmpdir, socket, pid and log files live in a per-server work directory inside
that root (a chrooted process sees nothing else), removed when it stops.

Accounts: `root`@localhost (socket, no password) as initialised, plus
`root`@'%' with a random password for TCP. They are created with
sql_log_bin=0, so a fresh server's GTID set is empty and replicas carry no
errant transactions. `initialize_template` runs `mysqld --initialize` once;
`start_mysql(template=...)` copies it (a fresh server UUID is generated when
auto.cnf is missing), which is much faster than initialising every server.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import mysql.connector

from dbbench_local.ports import BIND_ATTEMPTS, PortInUseError, port_in_use_in
from dbbench_local.processes import free_port, log_tail, pid_alive, stop_pid

ROOT_DIR_NAME = "mysql-root"
MYSQLD = PurePosixPath("/usr/sbin/mysqld")
# Work directories inside the root, one per server or template.
WORK_PARENT = PurePosixPath("/srv/dbbench")
START_TIMEOUT_S = 90.0
# 16 MiB of redo instead of the 100 MiB default: tests run many servers at once
# and disk is scarce on CI machines; extra_args come later and win.
SMALL_REDO = ("--innodb-redo-log-capacity=16M",)
# No test schedules events. MySQL 9.7's event scheduler thread spins a core at
# shutdown once replication has been set up: a primary took 7-9 s of CPU to stop
# (10.8 s of mysqld CPU for a three-server replication test, 4.0 s without it;
# measured 2026-11-29 by the threads' CPU during the stop).
NO_EVENTS = ("--event-scheduler=OFF",)
STOP_TIMEOUT_S = 60.0


def find_mysql_root(search: Iterable[str] | None = None) -> Path | None:
    """The chroot `make tools` built: $TOOLS_DIR, the parents of PATH entries, ./.tools."""
    candidates: list[Path] = []
    if os.environ.get("TOOLS_DIR"):
        candidates.append(Path(os.environ["TOOLS_DIR"]))
    entries = search if search is not None else os.environ.get("PATH", "").split(os.pathsep)
    candidates += [Path(entry).parent for entry in entries if entry]
    candidates.append(Path(__file__).resolve().parents[2] / ".tools")
    for base in candidates:
        root = base / ROOT_DIR_NAME
        if (root / MYSQLD.relative_to("/")).exists() and (root / ".dbbench-root").exists():
            return root
    return None


@dataclass(frozen=True)
class MySQLRoot:
    """The chroot and the translation of paths inside it to host paths."""

    path: Path

    def host(self, inside: PurePosixPath) -> Path:
        return self.path / inside.relative_to("/")

    def work_dir(self, prefix: str) -> PurePosixPath:
        """A fresh, empty directory inside the root (created on the host side)."""
        inside = WORK_PARENT / f"{prefix}-{os.getpid()}-{secrets.token_hex(4)}"
        self.host(inside).mkdir(parents=True)
        return inside

    def remove(self, inside: PurePosixPath) -> None:
        # Never follow anything out of the root's own file system.
        target = self.host(inside)
        if target.exists():
            subprocess.run(["rm", "-rf", "--one-file-system", str(target)], check=False)

    def mysqld(self, *args: str) -> list[str]:
        return ["chroot", str(self.path), str(MYSQLD), "--no-defaults", "--user=root", *args]


@dataclass
class MySQLServer:
    root: MySQLRoot
    work: PurePosixPath  # inside the root
    port: int
    server_id: int
    pid: int
    root_password: str
    _process: subprocess.Popen[bytes] | None = field(default=None, repr=False, compare=False)
    # How it was launched, to launch it again on a new port (see wait_ready).
    _template: PurePosixPath | None = field(default=None, repr=False, compare=False)
    _extra_args: tuple[str, ...] = field(default=(), repr=False, compare=False)

    @property
    def socket(self) -> Path:
        return self.root.host(self.work / "mysqld.sock")

    @property
    def log(self) -> Path:
        return self.root.host(self.work / "mysqld.err")

    def connect_args(self) -> dict[str, object]:
        """Arguments for mysql.connector.connect (and the runner's target)."""
        return {
            "host": "127.0.0.1",
            "port": self.port,
            "user": "root",
            "password": self.root_password,
        }

    def terminate(self) -> None:
        """Ask the server to shut down (SIGTERM by PID) without waiting."""
        if self._alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGTERM)

    def stop(self) -> None:
        """SIGTERM by PID, wait, SIGKILL after a timeout, remove the work dir; idempotent."""
        stop_pid(self.pid, self._process, STOP_TIMEOUT_S)
        self.root.remove(self.work)

    def _alive(self) -> bool:
        return pid_alive(self.pid, self._process)


def initialize_template(root: MySQLRoot) -> PurePosixPath:
    """`mysqld --initialize-insecure` into a new work dir; returns the data dir inside the root."""
    work = root.work_dir("template")
    (root.host(work) / "tmp").mkdir()
    datadir = work / "data"
    argv = root.mysqld(
        "--initialize-insecure",
        f"--datadir={datadir}",
        f"--tmpdir={work / 'tmp'}",
        f"--log-error={work / 'init.err'}",
        *SMALL_REDO,
    )
    result = subprocess.run(argv, capture_output=True, check=False)
    if result.returncode != 0:
        detail = log_tail(root.host(work / "init.err"))
        root.remove(work)
        raise RuntimeError(f"mysqld --initialize failed ({result.returncode}):\n{detail}")
    # Each copy must generate its own server UUID (replication refuses equal ones).
    root.host(datadir / "auto.cnf").unlink(missing_ok=True)
    return datadir


def _wait_ready(server: MySQLServer) -> None:
    process = server._process
    deadline = time.monotonic() + START_TIMEOUT_S
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            # Each launch has its own work dir, so the whole log is this start's.
            if port_in_use_in(server.log):
                detail = log_tail(server.log)
                raise PortInUseError(f"mysqld: port taken before it bound it:\n{detail}")
            raise RuntimeError(
                f"mysqld exited with {process.returncode} during start-up:\n{log_tail(server.log)}"
            )
        if server.socket.exists():
            try:
                conn = mysql.connector.connect(unix_socket=str(server.socket), user="root")
            except mysql.connector.Error as exc:
                last_error = exc
            else:
                _add_tcp_root(conn, server.root_password)
                return
        time.sleep(0.2)
    raise RuntimeError(
        f"mysqld did not accept connections within {START_TIMEOUT_S:.0f}s "
        f"(last error: {last_error}):\n{log_tail(server.log)}"
    )


def _add_tcp_root(
    conn: mysql.connector.abstracts.MySQLConnectionAbstract
    | mysql.connector.pooling.PooledMySQLConnection,
    password: str,
) -> None:
    """root@'%' for TCP (root@localhost is socket-only with skip-name-resolve)."""
    # Hex password (secrets.token_hex): inline quoting is safe.
    statements = [
        "SET SESSION sql_log_bin=0",
        f"CREATE USER 'root'@'%' IDENTIFIED BY '{password}'",
        "GRANT ALL PRIVILEGES ON *.* TO 'root'@'%' WITH GRANT OPTION",
    ]
    cursor = conn.cursor()
    try:
        for statement in statements:
            cursor.execute(statement)
    finally:
        cursor.close()
        conn.close()


def launch_mysql(
    root: MySQLRoot,
    *,
    server_id: int = 1,
    template: PurePosixPath | None = None,
    extra_args: Sequence[str] = (),
) -> MySQLServer:
    """Start mysqld without waiting for it (see `wait_ready`); binary log and GTIDs on."""
    work = root.work_dir(f"mysqld-{server_id}")
    host_work = root.host(work)
    (host_work / "tmp").mkdir()
    datadir = work / "data"
    if template is None:
        initialized = initialize_template(root)
        shutil.move(root.host(initialized), host_work / "data")
        root.remove(initialized.parent)
    else:
        shutil.copytree(root.host(template), host_work / "data", symlinks=True)
    port = free_port()
    argv = root.mysqld(
        "--bind-address=127.0.0.1",
        f"--port={port}",
        f"--socket={work / 'mysqld.sock'}",
        f"--datadir={datadir}",
        f"--tmpdir={work / 'tmp'}",
        f"--pid-file={work / 'mysqld.pid'}",
        f"--log-error={work / 'mysqld.err'}",
        "--mysqlx=OFF",
        # /var/lib/mysql-files does not exist in the root: mysqld aborts without this.
        "--secure-file-priv=",
        f"--server-id={server_id}",
        "--gtid-mode=ON",
        "--enforce-gtid-consistency=ON",
        "--log-bin=bin",
        "--relay-log=relay-bin",
        "--skip-name-resolve",
        "--innodb-buffer-pool-size=128M",
        *SMALL_REDO,
        *NO_EVENTS,
        *extra_args,
    )
    process = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    return MySQLServer(
        root=root,
        work=work,
        port=port,
        server_id=server_id,
        pid=process.pid,
        root_password=secrets.token_hex(12),
        _process=process,
        _template=template,
        _extra_args=tuple(extra_args),
    )


def wait_ready(server: MySQLServer) -> MySQLServer:
    """Wait until the server answers on its socket and give root a TCP account.

    A server whose port was taken before it bound it is launched again (new
    port, fresh work dir): use the returned server, not the one passed in.
    """
    for attempt in range(1, BIND_ATTEMPTS + 1):
        try:
            _wait_ready(server)
        except PortInUseError:
            server.stop()
            if attempt == BIND_ATTEMPTS:
                raise
            server = launch_mysql(
                server.root,
                server_id=server.server_id,
                template=server._template,
                extra_args=server._extra_args,
            )
        except BaseException:
            server.stop()
            raise
        else:
            return server
    raise AssertionError("unreachable")


def start_mysql(
    root: MySQLRoot,
    *,
    server_id: int = 1,
    template: PurePosixPath | None = None,
    extra_args: Sequence[str] = (),
) -> MySQLServer:
    """Start one server and wait until it takes TCP logins."""
    return wait_ready(
        launch_mysql(root, server_id=server_id, template=template, extra_args=extra_args)
    )
